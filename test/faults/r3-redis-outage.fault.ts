// R3 (docs/performance.md): redis-server dies for 5 s while two instances on one PostgreSQL
// database stream sessions and write source events. The outage is a kill -9 and a restart on the
// same port, not SIGSTOP: a Redis that crashes or is restarted (deploy, OOM kill, failover) resets
// every connection and loses whatever was published meanwhile (pub/sub is at-most-once and this
// one keeps nothing), which is the case the feed's repair paths exist for; a stopped process keeps
// its sockets open and delivers everything late, so nothing would need repairing.
// Asserted: both instances keep answering queries and mutations throughout, the feeds are
// repaired (WorkspaceResync, or holes filled from the database), and afterwards every client's
// view, kept by the client SDK's documented rules, equals what the database stores.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createTaskClient, type TaskClient } from '../../packages/client/src/index.ts'
import type { Store } from '../../src/store/store.ts'
import { readSummaryRows } from '../../src/store/summaries.ts'
import { instanceCluster } from '../support/instance-cluster.ts'
import { INSTANCE_ADMIN_TOKEN, metricValue, type Instance } from '../support/instances.ts'
import { http, ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { openStore } from '../support/summary-rebuild.ts'
import { eventually } from '../support/wait.ts'
import { AddMessageDocument, CreateTaskDocument, SessionDetailDocument, StartSessionDocument, UpdateTaskDocument } from '../generated/graphql.ts'

const OUTAGE_MS = 5_000
const TASKS = 6
/**
 * Tasks 0 and 1 stream, 2 and 3 also get short turns; 4 and 5 get task edits only, and none after
 * the outage: their last revisions reach a client only through a feed repair or a resync, never
 * through a later live event.
 */
const QUIET = new Set([4, 5])
const CLIENTS_PER_INSTANCE = 2
/** A streaming turn of bursts and pauses: at least 250 × 60 ms, so it runs across the whole outage. */
const streaming = JSON.stringify({ script: Array.from({ length: 250 }, () => [{ stream: { kind: 'message', count: 500 } }, { sleep: 60 }]).flat() })

describe('R3: redis-server down for 5 s under two instances (postgres)', () => {
  const cluster = instanceCluster(['a', 'b'], { LOG_LEVEL: 'error' })
  const clients: { on: Instance; client: TaskClient; resyncs: number }[] = []
  let instances: [Instance, Instance]
  let store: Store
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    instances = cluster.instances
    store = await openStore(cluster.databaseUrl)
    ;({ token, workspaceId } = await userWithWorkspace({ graphqlUrl: instances[0].url, adminToken: INSTANCE_ADMIN_TOKEN }, 'r3'))
  })
  afterAll(async () => {
    for (const { client } of clients) client.dispose()
    await store?.db.$disconnect()
  })

  it('keeps serving, repairs every feed, and every client converges on the stored summaries', { timeout: 300_000 }, async () => {
    // Each task has a session on the instance that will be sent its prompts: commands then never
    // need forwarding, which rides on Redis and is not what this scenario is about.
    const tasks: { taskId: string; sessionId: string; owner: Instance }[] = []
    for (let i = 0; i < TASKS; i++) {
      const owner = instances[i % 2]!
      const taskId = (await ok(owner.url, token, CreateTaskDocument, { input: { workspaceId, title: `task ${i}` } })).createTask.id
      const sessionId = (await ok(owner.url, token, StartSessionDocument, { input: { taskId } })).startSession.id
      tasks.push({ taskId, sessionId, owner })
    }
    for (const on of instances)
      for (let i = 0; i < CLIENTS_PER_INSTANCE; i++) {
        const entry = { on, resyncs: 0, client: undefined as unknown as TaskClient }
        entry.client = createTaskClient({
          url: on.url,
          token,
          webSocketImpl: WebSocket,
          onEvent: (event) => void (event.type === 'resync' && event.scope === 'workspace' && entry.resyncs++),
        })
        await entry.client.openWorkspace(workspaceId)
        clients.push(entry)
      }
    const repairsBefore = await Promise.all(instances.map((i) => metricValue(i, 'feed_gap_repairs_total')))

    // Two sessions stream across the outage, one per instance.
    for (const t of tasks.slice(0, 2))
      await ok(t.owner.url, token, AddMessageDocument, { input: { taskId: t.taskId, sessionId: t.sessionId, clientMessageId: randomUUID(), content: streaming } })

    // Source events on both instances from before the outage until after it: task edits and short turns.
    let producing = true
    let outage = false
    let recovered = false
    const failures: string[] = []
    let written = 0
    const quietEditsInOutage = new Map<number, number>()
    const produce = (async () => {
      for (let n = 0; producing && n < 10_000; n++) {
        const k = n % TASKS
        const t = tasks[k]!
        if (recovered && QUIET.has(k)) continue
        if (outage && QUIET.has(k)) quietEditsInOutage.set(k, (quietEditsInOutage.get(k) ?? 0) + 1)
        const via = n % 3 === 0 ? t.owner : instances[(n + 1) % 2]!
        // A request that fails outright (refused, reset) is a failure to report, not a crash of the loop.
        const edit = await http(via.url, token, UpdateTaskDocument, { id: t.taskId, input: { description: `edit ${n}` } }).catch((e: Error) => ({ errors: [e.message] }))
        if (edit.errors) failures.push(`updateTask via ${via.name}: ${JSON.stringify(edit.errors)}`)
        // Short turns on sessions 2 and 3, sent to their owner.
        if (n % 4 === 0 && (k === 2 || k === 3)) {
          const input = { taskId: t.taskId, sessionId: t.sessionId, clientMessageId: randomUUID(), content: `turn ${n}` }
          const sent = await http(t.owner.url, token, AddMessageDocument, { input }).catch((e: Error) => ({ errors: [e.message] }))
          if (sent.errors) failures.push(`addMessage via ${t.owner.name}: ${JSON.stringify(sent.errors)}`)
        }
        written++
        await new Promise((r) => setTimeout(r, 50))
      }
    })()

    const before = written
    await eventually(() => written >= before + 10)
    await cluster.redis.crash()
    outage = true
    const outageStarted = performance.now()
    const duringOutage = written
    // Both instances stay alive and keep answering reads while Redis is gone.
    while (performance.now() - outageStarted < OUTAGE_MS) {
      for (const on of instances) {
        expect((await fetch(`http://127.0.0.1:${on.port}/healthz`)).status).toBe(200)
        const { session } = await ok(on.url, token, SessionDetailDocument, { id: tasks[0]!.sessionId, last: 1 })
        expect(session?.id).toBe(tasks[0]!.sessionId)
      }
      await new Promise((r) => setTimeout(r, 250))
    }
    const writtenInOutage = written - duringOutage
    await cluster.redis.restart()
    outage = false
    recovered = true
    const afterRestart = written
    await eventually(() => written >= afterRestart + 10, 30_000)
    producing = false
    await produce

    expect(failures).toEqual([])
    expect(writtenInOutage).toBeGreaterThan(0)
    for (const k of QUIET) expect(quietEditsInOutage.get(k), `edits of quiet task ${k} during the outage`).toBeGreaterThan(0)
    for (const on of instances) expect(on.server.child.exitCode).toBeNull()

    // Every turn ends (the streams outlast the outage, then finish), so the stored summaries stop moving.
    for (const t of tasks)
      await eventually(async () => {
        const { session } = await ok(t.owner.url, token, SessionDetailDocument, { id: t.sessionId, last: 1 })
        return session?.state === 'WAITING_FOR_INPUT' && session.turns.every((turn) => turn.completedAt !== null)
      }, 90_000)

    // Each instance repaired its feeds from the database, or its clients were told to resync.
    const repairs = await Promise.all(instances.map((i, k) => metricValue(i, 'feed_gap_repairs_total').then((v) => v - repairsBefore[k]!)))
    for (const [k, on] of instances.entries()) {
      const resyncs = clients.filter((c) => c.on === on).reduce((sum, c) => sum + c.resyncs, 0)
      expect(repairs[k]! + resyncs, `${on.name}: feed repairs ${repairs[k]}, client resyncs ${resyncs}`).toBeGreaterThan(0)
    }

    // Every client's latest summary per task is what the database stores.
    const taskIds = tasks.map((t) => t.taskId)
    const stored = async () =>
      Object.fromEntries(
        (await readSummaryRows(store, taskIds)).map((row) => {
          const payload = JSON.parse(row.payload) as Record<string, unknown>
          return [row.taskId, { revision: row.revision, foregroundActivity: payload.foregroundActivity, pendingAction: payload.pendingAction, lastActivityAt: payload.lastActivityAt }]
        }),
      )
    const views = () =>
      clients.map(({ client }) => {
        const rows = client.summaries.getState().tasks
        return Object.fromEntries(
          taskIds.map((id) => {
            const s = rows[id]?.summary
            return [id, s && { revision: s.revision, foregroundActivity: s.foregroundActivity, pendingAction: s.pendingAction, lastActivityAt: s.lastActivityAt }]
          }),
        )
      })
    // The last projections of the turns' ends may still be landing: converged is when both agree.
    await eventually(async () => {
      const expected = JSON.stringify(await stored())
      return views().every((view) => JSON.stringify(view) === expected)
    }, 30_000).catch(() => undefined) // the comparison below names what differs
    const expected = await stored()
    for (const view of views()) expect(view).toEqual(expected)
    console.info(
      `R3: ${written} write rounds (${writtenInOutage} during the 5 s outage), feed repairs a=${repairs[0]} b=${repairs[1]}, client resyncs ${clients.map((c) => c.resyncs).join('/')}`,
    )
  })
})
