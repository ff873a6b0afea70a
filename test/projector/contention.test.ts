import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { Projector } from '../../src/projector/projector.ts'
import { createMetrics } from '../../src/observability/metrics.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { createStore } from '../../src/store/store.ts'
import { recordGitObservation } from '../../src/store/git-observations.ts'
import { setSessionError, updateSession } from '../../src/store/sessions.ts'
import { readSummaryRows } from '../../src/store/summaries.ts'
import { loadSummaryInputs } from '../../src/store/summary-sources.ts'
import { deriveSummary } from '../../src/summary/derive.ts'
import { semanticJson } from '../../src/summary/semantic.ts'

describe('compare-and-update under contention (postgres)', () => {
  let w: ProjectorWorld
  beforeAll(async () => (w = await projectorWorld('postgres')))
  afterAll(() => w?.close())

  it('50 concurrent source events on one task from several instances: revisions strictly increase, none duplicated, final equals a fresh rebuild', async () => {
    const task = await w.newTask('hot', [{ name: 'a' }, { name: 'b' }])
    const session = await w.newSession(task.id, { state: 'RUNNING' })
    await w.projector.idle()

    // Three more "instances": their own connection pools and projectors, publishing to the same feed.
    const instances = await Promise.all(
      [1, 2, 3].map(async () => {
        const db = await connectDatabase('postgres', w.databaseUrl)
        const store = createStore(db, w.clock.now)
        const metrics = createMetrics()
        const projector = new Projector({ store, pubsub: w.pubsub, logger: pino({ level: 'silent' }), metrics, maxAttempts: 50 })
        return { db, store, projector, metrics }
      }),
    )
    const stores = [w.store, ...instances.map((i) => i.store)]
    const projectors = [w.projector, ...instances.map((i) => i.projector)]
    const firstRevision = w.published.filter((p) => p.taskId === task.id).length

    // Ten rounds of five concurrent events: contention inside each round, and each round changes the
    // summary, so at least one revision per round whatever the scheduling (one burst could collapse into one).
    const event = async (i: number) => {
      const store = stores[i % stores.length]!
      if (i % 3 === 0)
        await recordGitObservation(store, {
          sessionId: session,
          taskRepositoryId: task.repositoryIds[i % 2]!,
          additions: i,
          deletions: 1,
          changedFiles: 1,
          ahead: 0,
          behind: 0,
          comparisonUnavailable: false,
        })
      else if (i % 3 === 1) await updateSession(store, session, { activeSubagentCount: i })
      else await setSessionError(store, session, { code: `c${i}`, message: 'm', stamp: `s${i}`, occurredAt: new Date(1_000_000 + i) })
      await projectors[i % projectors.length]!.project(task.id)
    }
    for (let round = 0; round < 10; round++) await Promise.all(Array.from({ length: 5 }, (_, k) => event(round * 5 + k)))
    await Promise.all(projectors.map((p) => p.idle()))

    const revisions = w.published.filter((p) => p.taskId === task.id).map((p) => p.revision).slice(firstRevision)
    expect(revisions.length).toBeGreaterThanOrEqual(10)
    expect(new Set(revisions).size).toBe(revisions.length)
    const [row] = await readSummaryRows(w.store, [task.id])
    expect(Math.max(...revisions)).toBe(row!.revision)
    // Every published revision is exactly one more than some earlier one: none skipped a CAS.
    expect([...revisions].sort((a, b) => a - b)).toEqual(
      Array.from({ length: revisions.length }, (_, i) => row!.revision - revisions.length + 1 + i),
    )
    const fresh = deriveSummary(
      (await loadSummaryInputs(w.store, [task.id], new Map([[task.id, new Date(JSON.parse(row!.payload).lastActivityAt)]]))).get(task.id)!,
    )
    expect(row!.payload).toBe(semanticJson(fresh))
    const retries = await Promise.all(instances.map(async (i) => (await i.metrics.projectorRetries.get()).values[0]?.value ?? 0))
    console.info(`contention: ${revisions.length} revisions, ${retries.reduce((a, b) => a + b, 0)} compare-and-update retries`)
    await Promise.all(instances.map((i) => i.db.$disconnect()))
  })
})
