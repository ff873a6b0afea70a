// Feed positions and tombstones at the store level, on a real database of each provider; time
// moves by a manual clock and the retention's timer by a fake scheduler, never by waiting.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { Registry } from 'prom-client'
import { PROVIDERS, migratedDatabase } from '../support/databases.ts'
import { manualClock } from '../support/projector-harness.ts'
import { eventually } from '../support/wait.ts'
import { connectDatabase, type Db } from '../../src/store/db.ts'
import { createStore, type Store } from '../../src/store/store.ts'
import { createUserWithToken } from '../../src/store/users.ts'
import { createWorkspace } from '../../src/store/workspaces.ts'
import { createTask, deleteTask, updateTask } from '../../src/store/tasks.ts'
import { compareAndUpdateSummary } from '../../src/store/summaries.ts'
import { ensureFeedEpoch, feedHead, purgeTombstones } from '../../src/store/feed.ts'
import { startTombstoneRetention } from '../../src/feed/tombstone-retention.ts'
import { createFeedMetrics } from '../../src/feed/feed-metrics.ts'
import type { Scheduler } from '../../src/util/scheduler.ts'

const HOUR = 3_600_000
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })

/** Timers the test fires by hand. */
function fakeScheduler() {
  let nextHandle = 0
  const pending = new Map<number, () => void>()
  const delays: number[] = []
  const cleared: unknown[] = []
  const scheduler: Scheduler = {
    setTimeout(fn, ms) {
      const handle = ++nextHandle
      pending.set(handle, fn)
      delays.push(ms)
      return handle
    },
    clearTimeout(handle) {
      cleared.push(handle)
      pending.delete(handle as number)
    },
  }
  return {
    scheduler,
    pending,
    delays,
    cleared,
    fire() {
      const [handle, fn] = [...pending][0] ?? []
      if (!handle || !fn) throw new Error('no timer pending')
      pending.delete(handle)
      fn()
    },
  }
}

describe.each(PROVIDERS)('feed positions and tombstones (%s)', (provider) => {
  let url: string
  let db: Db
  let store: Store
  let clock: ReturnType<typeof manualClock>
  let userId: string
  let extraDbs: Db[] = []

  // A database per test: a purge forgets old tombstones of every workspace.
  beforeEach(async () => {
    url = await migratedDatabase(provider)
    db = await connectDatabase(provider, url)
    clock = manualClock()
    store = createStore(db, clock.now)
    userId = (await createUserWithToken(db, 'owner')).user.id
  })
  afterEach(async () => {
    await Promise.all([db, ...extraDbs].map((d) => d?.$disconnect()))
    extraDbs = []
  })

  const newWorkspace = async (name: string) => (await createWorkspace(store, name, userId)).id
  const head = async (workspaceId: string) => (await feedHead(store, workspaceId))!
  const tombstones = (workspaceId: string) =>
    db.taskTombstone.findMany({ where: { workspaceId }, orderBy: { feedSequence: 'asc' } })

  /** Creates a task and deletes it at the clock's current time; returns the tombstone's position. */
  async function deletedTask(workspaceId: string) {
    const task = await createTask(store, { workspaceId, title: 'gone' })
    await deleteTask(store, task.id)
    return (await db.taskTombstone.findUniqueOrThrow({ where: { taskId: task.id } })).feedSequence
  }

  it('deleteTask leaves a tombstone at the next position after the previous head', async () => {
    const workspaceId = await newWorkspace('delete')
    const task = await createTask(store, { workspaceId, title: 't' })
    await updateTask(store, task.id, { title: 'edited' })
    const before = await head(workspaceId)
    const deletedAt = clock.advance(1000)

    await deleteTask(store, task.id)
    const after = await head(workspaceId)
    expect(after.sequence).toBe(before.sequence + 1)
    expect(await db.task.findUnique({ where: { id: task.id } })).toBeNull()
    expect(await tombstones(workspaceId)).toEqual([{ taskId: task.id, workspaceId, feedSequence: after.sequence, deletedAt }])
    expect(after.sequence).toBeGreaterThan(task.feedSequence)
  })

  it('purgeTombstones forgets only tombstones older than the cutoff and raises each workspace’s floor to the newest purged', async () => {
    const a = await newWorkspace('purge A')
    const b = await newWorkspace('purge B')
    const untouched = await newWorkspace('purge C')
    const a1 = await deletedTask(a)
    const b1 = await deletedTask(b)
    clock.advance(HOUR)
    const a2 = await deletedTask(a)
    const cutoff = clock.advance(HOUR)
    // Deleted at the cutoff exactly: not older, kept.
    const a3 = await deletedTask(a)
    const b2 = await deletedTask(b)
    const c1 = await deletedTask(untouched)
    expect(a1).toBeLessThan(a2)

    expect(await purgeTombstones(store, cutoff)).toBe(3)
    expect((await tombstones(a)).map((t) => t.feedSequence)).toEqual([a3])
    expect((await tombstones(b)).map((t) => t.feedSequence)).toEqual([b2])
    expect((await tombstones(untouched)).map((t) => t.feedSequence)).toEqual([c1])
    expect((await head(a)).floor).toBe(a2)
    expect((await head(b)).floor).toBe(b1)
    expect((await head(untouched)).floor).toBe(0)

    // Nothing left to purge: the floors stay where they are.
    expect(await purgeTombstones(store, cutoff)).toBe(0)
    expect((await head(a)).floor).toBe(a2)
    expect((await head(b)).floor).toBe(b1)
  })

  it('positions taken by concurrent task and summary writes are distinct and consecutive; a rejected write takes none', async () => {
    const workspaceId = await newWorkspace('concurrent')
    const taskIds: string[] = []
    for (let i = 0; i < 20; i++) taskIds.push((await createTask(store, { workspaceId, title: `t${i}` })).id)
    const before = await head(workspaceId)
    const now = clock.now()

    const [updates, summaries, rejected] = await Promise.all([
      Promise.all(taskIds.map((id, i) => updateTask(store, id, { title: `edited ${i}` }))),
      Promise.all(
        taskIds.map((taskId, i) =>
          compareAndUpdateSummary(store, { taskId, workspaceId, expectedRevision: null, payload: `{"n":${i}}`, updatedAt: now, derivationVersion: 1, attentionRank: 2, attentionKey: 0 }),
        ),
      ),
      // Stale compare-and-updates (no such revision): rolled back, so the position they took goes back too.
      Promise.all(
        taskIds.slice(0, 5).map((taskId) =>
          compareAndUpdateSummary(store, { taskId, workspaceId, expectedRevision: 7, payload: '{}', updatedAt: now, derivationVersion: 1, attentionRank: 2, attentionKey: 0 }),
        ),
      ),
    ])
    expect(rejected).toEqual(Array(5).fill(null))
    const positions = [...updates.map((t) => t.feedSequence), ...summaries.map((s) => s!.feedSequence)].sort((x, y) => x - y)
    expect(positions).toEqual(Array.from({ length: 40 }, (_, i) => before.sequence + 1 + i))
    expect((await head(workspaceId)).sequence).toBe(before.sequence + 40)
    // The rows carry the positions their writes returned.
    const rows = await db.task.findMany({ where: { workspaceId } })
    expect(new Map(rows.map((r) => [r.id, r.feedSequence]))).toEqual(new Map(updates.map((t) => [t.id, t.feedSequence])))
    const summaryRows = await db.taskStatusSummary.findMany({ where: { workspaceId } })
    expect(new Map(summaryRows.map((r) => [r.taskId, r.feedSequence]))).toEqual(
      new Map(taskIds.map((id, i) => [id, summaries[i]!.feedSequence])),
    )
  })

  it('tombstone retention purges at start and on each interval with the store’s clock; stop() clears the timer', async () => {
    const workspaceId = await newWorkspace('retention')
    const metrics = createFeedMetrics(new Registry())
    const purged = async () => (await metrics.tombstonesPurged.get()).values[0]?.value ?? 0
    const oldest = await deletedTask(workspaceId)
    clock.advance(HOUR)
    const younger = await deletedTask(workspaceId)
    clock.advance(HOUR + 1)
    const timers = fakeScheduler()

    const stop = startTombstoneRetention({ store, retentionMs: 2 * HOUR, logger, metrics, scheduler: timers.scheduler })
    // At start, before any timer fires: only the tombstone older than the retention goes.
    await eventually(async () => (await purged()) === 1 && timers.pending.size === 1)
    expect((await tombstones(workspaceId)).map((t) => t.feedSequence)).toEqual([younger])
    expect((await head(workspaceId)).floor).toBe(oldest)
    expect(timers.delays).toEqual([HOUR / 2])

    clock.advance(HOUR)
    timers.fire()
    await eventually(async () => (await purged()) === 2)
    expect(await tombstones(workspaceId)).toEqual([])
    expect((await head(workspaceId)).floor).toBe(younger)
    expect(timers.delays).toEqual([HOUR / 2, HOUR / 2])
    expect(timers.pending.size).toBe(1)

    const [handle] = [...timers.pending.keys()]
    stop()
    expect(timers.cleared).toEqual([handle])
    expect(timers.pending.size).toBe(0)
  })

  it('a retention stopped while its purge runs schedules nothing more', async () => {
    const workspaceId = await newWorkspace('stopped mid-run')
    const metrics = createFeedMetrics(new Registry())
    await deletedTask(workspaceId)
    clock.advance(3 * HOUR)
    const timers = fakeScheduler()

    const stop = startTombstoneRetention({ store, retentionMs: 2 * HOUR, logger, metrics, scheduler: timers.scheduler })
    stop()
    // The purge counts before the run decides whether to reschedule, in the same step.
    await eventually(async () => (await metrics.tombstonesPurged.get()).values[0]?.value === 1)
    expect(await tombstones(workspaceId)).toEqual([])
    expect(timers.delays).toEqual([])
  })

  it('a failed purge is retried at the next interval', async () => {
    const metrics = createFeedMetrics(new Registry())
    let attempts = 0
    const failing: Store = {
      ...store,
      db: {
        $transaction: async () => {
          attempts++
          throw new Error('database unavailable')
        },
      } as unknown as Db,
    }
    const timers = fakeScheduler()
    const stop = startTombstoneRetention({ store: failing, retentionMs: 24 * HOUR, logger, metrics, scheduler: timers.scheduler })
    await eventually(() => timers.pending.size === 1)
    expect(attempts).toBe(1)
    // At most hourly, however long the retention.
    expect(timers.delays).toEqual([HOUR])
    timers.fire()
    await eventually(() => timers.pending.size === 1 && attempts === 2)
    stop()
    expect(timers.pending.size).toBe(0)
  })

  it('ensureFeedEpoch called at once from two stores (two connections) on a database without an epoch returns one epoch', async () => {
    const second = await connectDatabase(provider, url)
    extraDbs.push(second)
    const stores = [store, createStore(second, clock.now)]
    expect(await db.feedEpoch.count()).toBe(0)

    const epochs = await Promise.all(Array.from({ length: 10 }, (_, i) => ensureFeedEpoch(stores[i % 2]!)))
    expect(new Set(epochs).size).toBe(1)
    expect(await db.feedEpoch.count()).toBe(1)
    // Later calls (a restart) keep it.
    expect(await ensureFeedEpoch(stores[1]!)).toBe(epochs[0])
  })
})
