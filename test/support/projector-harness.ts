import { pino } from 'pino'
import type { DatabaseProvider } from '../../src/config/config.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { createStore, type Store } from '../../src/store/store.ts'
import { createMemoryPubSub } from '../../src/pubsub/memory.ts'
import type { PubSub, SummaryUpdatedPayload } from '../../src/pubsub/pubsub.ts'
import { Projector } from '../../src/projector/projector.ts'
import { createMetrics } from '../../src/observability/metrics.ts'
import { createSession } from '../../src/store/sessions.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createWorkspace } from '../../src/store/workspaces.ts'
import { createUserWithToken } from '../../src/store/users.ts'
import { readSummaryRows, toStoredSummary } from '../../src/store/summaries.ts'
import { loadSummaryInputs } from '../../src/store/summary-sources.ts'
import { deriveSummary } from '../../src/summary/derive.ts'
import { semanticJson } from '../../src/summary/semantic.ts'
import { expect } from 'vitest'
import { migratedDatabase } from './databases.ts'

/** A clock the test moves by hand: no sleeps, exact times. */
export function manualClock(start = '2026-01-01T00:00:00.000Z') {
  let now = new Date(start).getTime()
  return {
    now: () => new Date(now),
    advance(ms: number) {
      now += ms
      return new Date(now)
    },
  }
}

export interface ProjectorWorld {
  store: Store
  pubsub: PubSub
  projector: Projector
  clock: ReturnType<typeof manualClock>
  workspaceId: string
  userId: string
  databaseUrl: string
  statements: string[]
  /** Summary replacements published on the workspace feed, in order. */
  published: SummaryUpdatedPayload[]
  newTask(title?: string, repositories?: { name: string }[]): Promise<{ id: string; repositoryIds: string[] }>
  newSession(taskId: string, options?: { isPrimary?: boolean; state?: 'WAITING_FOR_INPUT' | 'RUNNING' | 'CANCELLED' | 'FAILED' }): Promise<string>
  /** The stored summary after every projection in flight has finished. */
  summary(taskId: string): Promise<ReturnType<typeof toStoredSummary>>
  /** A second projector on the same database (another server instance, or a restarted one). */
  restartedProjector(): Projector
  /**
   * Another server instance beside this one, both projecting: its own connection and store (its
   * writes emit on its own source events). SQLite shares the connection (better-sqlite3 would
   * block the one event loop on a second connection's lock), so there the two race by interleaving.
   */
  otherInstance(): Promise<{ store: Store; projector: Projector }>
  close(): Promise<void>
}

export async function projectorWorld(provider: DatabaseProvider, databaseUrl?: string): Promise<ProjectorWorld> {
  const url = databaseUrl ?? (await migratedDatabase(provider))
  const statements: string[] = []
  const db = await connectDatabase(provider, url, { onQuery: (sql) => statements.push(sql) })
  const clock = manualClock()
  const store = createStore(db, clock.now)
  const pubsub = createMemoryPubSub()
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const projectors: Projector[] = []
  const extraDbs: (typeof db)[] = []
  const makeProjector = (on: Store = store) => {
    const made = new Projector({ store: on, pubsub, logger, metrics: createMetrics() })
    projectors.push(made)
    return made
  }
  let projector = makeProjector()
  projector.start()
  const { user } = await createUserWithToken(db, 'owner')
  const workspace = await createWorkspace(store, 'W', user.id)
  const published: SummaryUpdatedPayload[] = []
  const feed = pubsub.subscribe('workspace', workspace.id)
  void (async () => {
    for await (const event of feed) if (event.type === 'TaskStatusSummaryUpdated') published.push(event)
  })()

  const world: ProjectorWorld = {
    store,
    pubsub,
    get projector() {
      return projector
    },
    clock,
    workspaceId: workspace.id,
    userId: user.id,
    databaseUrl: url,
    statements,
    published,
    async newTask(title = 'task', repositories = []) {
      const task = await createTask(store, { workspaceId: workspace.id, title, repositories })
      const repos = await db.taskRepository.findMany({ where: { taskId: task.id }, orderBy: { position: 'asc' } })
      await projector.idle()
      return { id: task.id, repositoryIds: repos.map((r) => r.id) }
    },
    async newSession(taskId, options = {}) {
      const session = await createSession(store, {
        taskId,
        agentProfile: 'mock',
        isPrimary: options.isPrimary,
        state: options.state ?? 'WAITING_FOR_INPUT',
      })
      return session.id
    },
    async summary(taskId) {
      await projector.idle()
      const [row] = await readSummaryRows(store, [taskId])
      if (!row) throw new Error(`no summary row for ${taskId}`)
      return toStoredSummary(row)
    },
    restartedProjector() {
      projector.stop()
      projector = makeProjector()
      projector.start()
      return projector
    },
    async otherInstance() {
      let other = store
      if (provider === 'postgres') {
        const otherDb = await connectDatabase(provider, url)
        extraDbs.push(otherDb)
        other = createStore(otherDb, clock.now)
      }
      const made = makeProjector(other)
      made.start()
      return { store: other, projector: made }
    },
    async close() {
      // Every projector this world made (restarts included) finishes before the pool closes.
      for (const p of projectors) p.stop()
      await Promise.all(projectors.map((p) => p.idle()))
      await feed.return?.()
      await Promise.all([db, ...extraDbs].map((d) => d.$disconnect()))
    },
  }
  return world
}

/** Once the projector is idle: the task's stored summary row, asserted equal to one derived afresh from every source. */
export async function convergedSummaryRow(w: ProjectorWorld, taskId: string) {
  await w.projector.idle()
  const [row] = await readSummaryRows(w.store, [taskId])
  const inputs = (await loadSummaryInputs(w.store, [taskId], new Map([[taskId, new Date(JSON.parse(row!.payload).lastActivityAt)]]))).get(taskId)!
  expect(row!.payload).toBe(semanticJson(deriveSummary(inputs)))
  return row!
}
