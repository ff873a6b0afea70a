// P9: how fast access ends on sockets that are already open (contract v1.3: within 1 s, on every
// instance). Two server processes on one PostgreSQL database and one redis-server. Each sample:
// a user holds a graphql-ws socket on A and one on B (a subscription on each, as the SDK holds);
// the admin rotates its token with an HTTP request to A; the time from sending the rotation
// until each socket's 4403 close event. The same-instance socket is the same-run baseline. Then
// the same for removeWorkspaceMember: the time until the workspaceEvents subscription on B (and
// on A) ends with FORBIDDEN. Each socket holds what the SDK holds: its ClientWorkspaceEvents after
// the cursor of the user's ClientBoot. The revocations (removeWorkspaceMember, rotateUserToken)
// and the setup (createUser, addWorkspaceMember) are admin mutations the SDK does not send.
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { deployMigrations } from '../src/store/migrate.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { startRedisServer } from '../test/support/redis-server.ts'
import { report, scaled } from './scenario.ts'
import { BOOT_PAGE_SIZE, ClientBootDocument, ClientWorkspaceEventsDocument, operationName, sdkHttp, sdkSubscribe } from './sdk-operations.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN, type BenchServer } from './server-process.ts'
import { httpGql, quantile } from './support.ts'

const SAMPLES = Number(process.env.BENCH_REVOCATIONS ?? scaled(100, 5))
const DEADLINE_MS = 10_000
const FEED = operationName(ClientWorkspaceEventsDocument)

async function gql<T>(server: BenchServer, token: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const result = await httpGql<T>(server.url, token, query, variables)
  if (!result.data) throw new Error(`GraphQL errors: ${JSON.stringify(result)}`)
  return result.data
}

/** A connected socket whose close (code and time) and subscription end (code and time) are recorded. */
async function openSocket(server: BenchServer, token: string, workspaceId: string, after: string) {
  let closed: { code: number; at: number } | undefined
  let ended: { code: string | undefined; at: number } | undefined
  const client: Client = await new Promise((resolve, reject) => {
    const c = createClient({
      url: server.wsUrl,
      webSocketImpl: WebSocket,
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: () => undefined,
      connectionParams: { authorization: `Bearer ${token}` },
      on: {
        connected: () => resolve(c),
        closed: (event) => {
          closed = { code: (event as { code: number }).code, at: performance.now() }
          reject(new Error('closed before connected'))
        },
      },
    })
  })
  sdkSubscribe(client, ClientWorkspaceEventsDocument, { workspaceId, after }, undefined, (error) => {
    ended ??= { code: (error as { extensions?: { code?: string } }[])[0]?.extensions?.code, at: performance.now() }
  })
  const until = async <T>(probe: () => T | undefined): Promise<T> => {
    const deadline = performance.now() + DEADLINE_MS
    for (;;) {
      const value = probe()
      if (value !== undefined) return value
      if (performance.now() > deadline) throw new Error('no close / end within the deadline')
      await new Promise((r) => setTimeout(r, 1))
    }
  }
  return { client, closedAt: () => until(() => closed), endedAt: () => until(() => ended) }
}

/** Until each server holds exactly `n` access entries: the socket and its live subscription (its stream exists). */
const waitForLiveSubscriptions = async (servers: BenchServer[], n: number) => {
  for (const s of servers)
    for (const deadline = performance.now() + DEADLINE_MS; (await s.call<number>('accessHeld')) !== n; )
      if (performance.now() > deadline) throw new Error('subscriptions did not start')
}

const cluster = await startPostgresCluster()
const redis = await startRedisServer()
const servers: BenchServer[] = []
try {
  await cluster.query('CREATE DATABASE p9')
  await deployMigrations('postgres', cluster.url('p9'))
  const start = () => startBenchServer({ env: { DATABASE_URL: cluster.url('p9'), REDIS_URL: redis.url }, start: { skipMigrations: true } })
  const [a, b] = await Promise.all([start(), start()])
  servers.push(a, b)
  const { createWorkspace } = await gql<{ createWorkspace: { id: string } }>(a, BENCH_ADMIN_TOKEN, 'mutation { createWorkspace(name: "p9") { id } }')
  const ws = createWorkspace.id

  const rotation = { sameInstance: [] as number[], otherInstance: [] as number[] }
  const removal = { sameInstance: [] as number[], otherInstance: [] as number[] }
  for (let i = 0; i < SAMPLES; i++) {
    const { createUser } = await gql<{ createUser: { token: string; user: { id: string } } }>(a, BENCH_ADMIN_TOKEN, 'mutation ($n: String!) { createUser(name: $n) { token user { id } } }', { n: `p9-${i}` })
    const userId = createUser.user.id
    await gql(a, BENCH_ADMIN_TOKEN, 'mutation ($ws: ID!, $u: ID!) { addWorkspaceMember(workspaceId: $ws, userId: $u) { id } }', { ws, u: userId })

    // Removal first (the sockets stay open), then rotation (they close).
    // The SDK's openWorkspace, as the user: boot, then the feed after its cursor (on each instance).
    const { boot } = await sdkHttp(a.url, createUser.token, ClientBootDocument, { workspaceId: ws, first: BOOT_PAGE_SIZE })
    const onA = await openSocket(a, createUser.token, ws, boot.feedCursor)
    const onB = await openSocket(b, createUser.token, ws, boot.feedCursor)
    await waitForLiveSubscriptions([a, b], 2)
    let sent = performance.now()
    await gql(a, BENCH_ADMIN_TOKEN, 'mutation ($ws: ID!, $u: ID!) { removeWorkspaceMember(workspaceId: $ws, userId: $u) { id } }', { ws, u: userId })
    const [endA, endB] = await Promise.all([onA.endedAt(), onB.endedAt()])
    if (endA.code !== 'FORBIDDEN' || endB.code !== 'FORBIDDEN') throw new Error(`expected FORBIDDEN, got ${endA.code} / ${endB.code}`)
    removal.sameInstance.push(endA.at - sent)
    removal.otherInstance.push(endB.at - sent)

    sent = performance.now()
    await gql(a, BENCH_ADMIN_TOKEN, 'mutation ($u: ID!) { rotateUserToken(userId: $u) { token } }', { u: userId })
    const [closeA, closeB] = await Promise.all([onA.closedAt(), onB.closedAt()])
    if (closeA.code !== 4403 || closeB.code !== 4403) throw new Error(`expected 4403, got ${closeA.code} / ${closeB.code}`)
    rotation.sameInstance.push(closeA.at - sent)
    rotation.otherInstance.push(closeB.at - sent)
    await Promise.all([onA.client.dispose(), onB.client.dispose()])
  }

  const p = quantile
  const max = (xs: number[]) => Math.max(...xs)
  report({
    id: 'P9',
    title: 'revocation on open sockets across two instances (PostgreSQL + Redis)',
    rows: [
      { metric: `rotateUserToken on A → 4403 close of the socket holding ${FEED} on B, p50 (latency ratio)`, value: p(rotation.otherInstance, 0.5), unit: 'ms', baseline: { label: 'socket on A', value: p(rotation.sameInstance, 0.5) } },
      {
        metric: `rotateUserToken on A → 4403 close of the socket holding ${FEED} on B, p99 (latency ratio)`,
        value: p(rotation.otherInstance, 0.99),
        unit: 'ms',
        baseline: { label: 'socket on A', value: p(rotation.sameInstance, 0.99) },
        goal: `every sample ≤ 1000 ms (max ${max(rotation.otherInstance).toFixed(0)} ms)`,
        met: max(rotation.otherInstance) <= 1000,
      },
      { metric: `removeWorkspaceMember on A → ${FEED} ends FORBIDDEN on B, p50 (latency ratio)`, value: p(removal.otherInstance, 0.5), unit: 'ms', baseline: { label: 'subscription on A', value: p(removal.sameInstance, 0.5) } },
      {
        metric: `removeWorkspaceMember on A → ${FEED} ends FORBIDDEN on B, p99 (latency ratio)`,
        value: p(removal.otherInstance, 0.99),
        unit: 'ms',
        baseline: { label: 'subscription on A', value: p(removal.sameInstance, 0.99) },
        goal: `every sample ≤ 1000 ms (max ${max(removal.otherInstance).toFixed(0)} ms)`,
        met: max(removal.otherInstance) <= 1000,
      },
    ],
    notes: [
      `${SAMPLES} users, one after another; each sample is measured by the client from sending the HTTP mutation to A until the close (or error) frame arrives: the mutation's own round trip is included. Worst case across instances: rotation ${max(rotation.otherInstance).toFixed(1)} ms, removal ${max(removal.otherInstance).toFixed(1)} ms.`,
      `Each user's sockets hold what the SDK holds: ${FEED} (its selection) after the cursor of the user's ClientBoot. rotateUserToken and removeWorkspaceMember (admin mutations over HTTP, selections \`{ token }\` and \`{ id }\`) are not SDK operations.`,
    ],
  })
} finally {
  for (const s of servers.reverse()) await s.stop()
  await redis.stop()
  cluster.stop()
}
