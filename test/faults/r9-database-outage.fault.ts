// R9 (issue 31): PostgreSQL stops for 3.5 s (pg_ctl stop -m fast, then start on the same data
// directory and port) under two server processes on one Redis, while clients send queries and
// mutations over HTTP and over WebSocket. Before, all 68 queries of such an outage answered HTTP
// 500 INTERNAL_SERVER_ERROR and /readyz stayed 200.
// Asserted: every answer sent and received while the database is down is UNAVAILABLE (over HTTP
// a 503 with Retry-After), none at any time is INTERNAL_SERVER_ERROR or a 500; /readyz is 503
// during and 200 after, /healthz 200 throughout; afterwards, without a restart of either server, a
// mutation succeeds on both transports, the stored summaries equal a rebuild and every client's
// feed view equals what the database stores.
import type { ChildProcess } from 'node:child_process'
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createTaskClient, type TaskClient } from '../../packages/client/src/index.ts'
import { deployMigrations } from '../../src/store/migrate.ts'
import type { Store } from '../../src/store/store.ts'
import { readSummaryRows } from '../../src/store/summaries.ts'
import { ok, wsClient, wsExecute } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { INSTANCE_ADMIN_TOKEN, killAll, startInstance, type Instance } from '../support/instances.ts'
import { startPostgresCluster, type PostgresCluster } from '../support/postgres-cluster.ts'
import { startRedisServer, type RedisServer } from '../support/redis-server.ts'
import { openStore, summaryDrift } from '../support/summary-rebuild.ts'
import { eventually } from '../support/wait.ts'
import { CreateTaskDocument, TaskDocument, UpdateTaskDocument } from '../generated/graphql.ts'

const OUTAGE_MS = 3_500
const TASKS = 4
/** /readyz probes the database at most once a second (src/server/database-health.ts): 503 within that. */
const READYZ_SLACK_MS = 1_500

type Phase = 'before' | 'down' | 'after'
interface Answer {
  transport: 'http' | 'ws'
  kind: 'query' | 'mutation'
  sent: Phase
  received: Phase
  /** HTTP status (0 over WebSocket). */
  status: number
  retryAfter?: string | null
  code: string
}

describe('R9: PostgreSQL stopped for 3.5 s under two instances (postgres)', () => {
  const children: ChildProcess[] = []
  let cluster: PostgresCluster
  let redis: RedisServer
  let instances: Instance[]
  let store: Store
  const sockets: Client[] = []
  const clients: TaskClient[] = []

  beforeAll(async () => {
    cluster = await startPostgresCluster()
    await cluster.query('CREATE DATABASE app')
    const databaseUrl = cluster.url('app')
    await deployMigrations('postgres', databaseUrl)
    redis = await startRedisServer()
    // A lease far longer than the outage: this scenario is about answers, not about losing sessions.
    const env = { DATABASE_URL: databaseUrl, REDIS_URL: redis.url, SESSION_LEASE_MS: '20000', LOG_LEVEL: 'fatal' }
    instances = await Promise.all(['a', 'b'].map((name) => startInstance(name, env, children)))
    store = await openStore(databaseUrl)
  })
  afterAll(async () => {
    for (const client of clients) client.dispose()
    await Promise.all(sockets.map((s) => s.dispose()))
    killAll(children)
    await store?.db.$disconnect()
    await redis?.stop()
    cluster?.stop()
  })

  it('answers UNAVAILABLE (503 + Retry-After) throughout, /readyz 503 and /healthz 200, and resumes by itself', { timeout: 180_000 }, async () => {
    const { token, workspaceId } = await userWithWorkspace({ graphqlUrl: instances[0]!.url, adminToken: INSTANCE_ADMIN_TOKEN }, 'r9')
    const taskIds: string[] = []
    for (let i = 0; i < TASKS; i++) taskIds.push((await ok(instances[i % 2]!.url, token, CreateTaskDocument, { input: { workspaceId, title: `task ${i}` } })).createTask.id)
    for (const on of instances) {
      sockets.push(await wsClient(on.wsUrl, token))
      const client = createTaskClient({ url: on.url, token, webSocketImpl: WebSocket })
      await client.openWorkspace(workspaceId)
      clients.push(client)
    }

    let phase: Phase = 'before'
    let stoppedAt = 0
    const answers: Answer[] = []
    const probes: { path: string; at: number; received: Phase; status: number }[] = []
    const post = async (on: Instance, kind: Answer['kind'], query: string, variables: Record<string, unknown>) => {
      const sent = phase
      const response = await fetch(on.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query, variables }),
      })
      const body = (await response.json()) as { errors?: { extensions?: { code?: string } }[] }
      const code = body.errors?.[0]?.extensions?.code ?? 'OK'
      answers.push({ transport: 'http', kind, sent, received: phase, status: response.status, retryAfter: response.headers.get('retry-after'), code })
    }
    const overWs = async (socket: Client, kind: Answer['kind'], run: () => Promise<{ errors?: readonly { extensions?: { code?: unknown } }[] }>) => {
      const sent = phase
      const result = await run()
      const code = String(result.errors?.[0]?.extensions?.code ?? 'OK')
      answers.push({ transport: 'ws', kind, sent, received: phase, status: 0, code })
    }

    // Clients: every instance, both transports, a query and a mutation each round, until stopped.
    let producing = true
    let round = 0
    const produce = (async () => {
      while (producing && round < 10_000) {
        const n = round++
        const taskId = taskIds[n % TASKS]!
        await Promise.all(
          instances.flatMap((on, k) => [
            post(on, 'query', print(TaskDocument), { id: taskId }),
            post(on, 'mutation', print(UpdateTaskDocument), { id: taskId, input: { description: `http ${on.name} ${n}` } }),
            overWs(sockets[k]!, 'query', () => wsExecute(sockets[k]!, TaskDocument, { id: taskId })),
            overWs(sockets[k]!, 'mutation', () => wsExecute(sockets[k]!, UpdateTaskDocument, { id: taskId, input: { description: `ws ${on.name} ${n}` } })),
          ]),
        )
        await new Promise((r) => setTimeout(r, 25))
      }
    })()
    // Liveness and readiness of both instances, polled as a load balancer would.
    let probing = true
    const probe = (async () => {
      while (probing)
        for (const on of instances) {
          for (const path of ['/healthz', '/readyz']) {
            const at = performance.now()
            const status = await fetch(`http://127.0.0.1:${on.port}${path}`).then((r) => r.status)
            probes.push({ path, at: at - stoppedAt, received: phase, status })
          }
          await new Promise((r) => setTimeout(r, 50))
        }
    })()

    await eventually(() => round >= 10)
    // pg_ctl stop -w returns once the server is down (it blocks this process meanwhile).
    cluster.shutDown('fast')
    stoppedAt = performance.now()
    phase = 'down'
    await new Promise((r) => setTimeout(r, OUTAGE_MS))
    phase = 'after'
    cluster.start()
    const restartedRound = round
    // Service resumes by itself: both instances ready again, and serving writes.
    for (const on of instances) await eventually(async () => (await fetch(`http://127.0.0.1:${on.port}/readyz`)).status === 200, 15_000)
    await eventually(() => round >= restartedRound + 10, 30_000)
    producing = false
    probing = false
    await Promise.all([produce, probe])

    const byCode = (list: Answer[]) =>
      Object.fromEntries(
        [...list.reduce((m, a) => m.set(`${a.transport} ${a.kind} ${a.transport === 'http' ? `${a.status} ` : ''}${a.code}`, (m.get(`${a.transport} ${a.kind} ${a.transport === 'http' ? `${a.status} ` : ''}${a.code}`) ?? 0) + 1), new Map<string, number>())].sort(),
      )
    const during = answers.filter((a) => a.sent === 'down' && a.received === 'down')
    const after = answers.filter((a) => a.sent === 'after' && a.received === 'after')
    console.info(
      `R9: ${answers.length} answers; the outage answers by code (sent and answered while PostgreSQL was down, ${OUTAGE_MS} ms): ${JSON.stringify(byCode(during))}; ` +
        `all answers: ${JSON.stringify(byCode(answers))}; probes during: ${JSON.stringify(
          probes.filter((p) => p.received === 'down').reduce<Record<string, number>>((m, p) => ({ ...m, [`${p.path} ${p.status}`]: (m[`${p.path} ${p.status}`] ?? 0) + 1 }), {}),
        )}`,
    )

    // During: only UNAVAILABLE, over HTTP as 503 with Retry-After; on every transport and kind.
    for (const transport of ['http', 'ws'] as const)
      for (const kind of ['query', 'mutation'] as const) expect(during.filter((a) => a.transport === transport && a.kind === kind).length, `${transport} ${kind}s during the outage`).toBeGreaterThan(0)
    expect(during.filter((a) => a.code !== 'UNAVAILABLE')).toEqual([])
    expect(during.filter((a) => a.transport === 'http' && (a.status !== 503 || a.retryAfter !== '1'))).toEqual([])
    // Never the server "breaking", at any time (in flight at the stop included).
    expect(answers.filter((a) => a.code === 'INTERNAL_SERVER_ERROR' || a.status >= 500 && a.status !== 503)).toEqual([])
    // After: everything served again.
    expect(after.length).toBeGreaterThan(0)
    expect(after.filter((a) => a.code !== 'OK')).toEqual([])

    expect(probes.filter((p) => p.path === '/healthz' && p.status !== 200)).toEqual([])
    const readyzDuring = probes.filter((p) => p.path === '/readyz' && p.received === 'down' && p.at > READYZ_SLACK_MS)
    expect(readyzDuring.length).toBeGreaterThan(0)
    expect(readyzDuring.filter((p) => p.status !== 503)).toEqual([])
    for (const on of instances) expect(on.server.child.exitCode, `${on.name} still running`).toBeNull()

    // The summaries equal a rebuild (projections the outage failed were made again), and each
    // client's feed view (repaired or resynced) equals what the database stores.
    await eventually(async () => (await summaryDrift(store, taskIds)).length === 0, 30_000).catch(() => undefined)
    expect(await summaryDrift(store, taskIds)).toEqual([])
    const stored = async () => Object.fromEntries((await readSummaryRows(store, taskIds)).map((row) => [row.taskId, row.revision]))
    const views = () => clients.map((client) => Object.fromEntries(taskIds.map((id) => [id, client.summaries.getState().tasks[id]?.summary?.revision])))
    await eventually(async () => {
      const expected = JSON.stringify(await stored())
      return views().every((view) => JSON.stringify(view) === expected)
    }, 30_000).catch(() => undefined)
    const expected = await stored()
    for (const view of views()) expect(view).toEqual(expected)
  })
})
