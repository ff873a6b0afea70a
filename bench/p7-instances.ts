// P7: what a second instance costs. Every instance is a server process of its own on one
// PostgreSQL server. Delta latency: an updateTask over HTTP on instance A until its summary's
// TaskStatusSummaryUpdated reaches a graphql-ws subscriber; the baseline is one instance with the
// in-process pub/sub (mutation and subscriber on it), the case measured is two instances over
// Redis with the subscriber on B (the delta crosses Redis), and, as a same-run control, on A.
// Forwarding: a session command sent to the owner A (local) and to B (forwarded to A over Redis).
// Samples alternate in blocks so both sides see the same conditions. The subscriber sends the
// SDK's own operations (ClientBoot, then ClientWorkspaceEvents after boot.feedCursor, as its
// openWorkspace does); the triggers, updateTask and refreshSessionGit, are not SDK operations
// (the SDK edits no task and refreshes no git status) and go over HTTP with a `{ id }` selection.
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { deployMigrations } from '../src/store/migrate.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { startRedisServer } from '../test/support/redis-server.ts'
import { report, scaled } from './scenario.ts'
import { BOOT_PAGE_SIZE, ClientBootDocument, ClientWorkspaceEventsDocument, operationName, sdkHttp, sdkSubscribe } from './sdk-operations.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN, type BenchServer } from './server-process.ts'
import { httpGql, quantile, sleep } from './support.ts'

// Short (BENCH_SHORT=1): one block of each.
const DELTAS = Number(process.env.BENCH_DELTAS ?? scaled(200, 25))
const COMMANDS = Number(process.env.BENCH_FORWARD_COMMANDS ?? scaled(300, 25))
const WARMUP = scaled(20, 5)
const BLOCK = 25
const DELTA_TIMEOUT_MS = 10_000

const gql = <T>(server: BenchServer, query: string, variables: Record<string, unknown> = {}) => httpGql<T>(server.url, BENCH_ADMIN_TOKEN, query, variables).then((r) => r.data)

const FEED = operationName(ClientWorkspaceEventsDocument)

/** A feed subscriber (the SDK's boot, then its feed) that resolves the wait for a task's next summary revision. */
async function subscriber(server: BenchServer, workspaceId: string) {
  const { boot } = await sdkHttp(server.url, BENCH_ADMIN_TOKEN, ClientBootDocument, { workspaceId, first: BOOT_PAGE_SIZE })
  const client: Client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` }, lazy: false })
  const waiters = new Map<string, () => void>()
  sdkSubscribe(client, ClientWorkspaceEventsDocument, { workspaceId, after: boot.feedCursor }, (data) => {
    const event = data?.workspaceEvents
    if (event?.__typename !== 'TaskStatusSummaryUpdated') return
    waiters.get(event.taskId)?.()
    waiters.delete(event.taskId)
  })
  const next = (taskId: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no summary delta for ${taskId} within ${DELTA_TIMEOUT_MS} ms`)), DELTA_TIMEOUT_MS)
      waiters.set(taskId, () => {
        clearTimeout(timer)
        resolve()
      })
    })
  return { client, next }
}

/** Mutation on `writer` → the summary delta at `reader`'s subscriber, `n` times; milliseconds each. */
async function deltaLatencies(writer: BenchServer, reader: Awaited<ReturnType<typeof subscriber>>, taskId: string, n: number, into: number[]) {
  for (let i = 0; i < n; i++) {
    const started = performance.now()
    const arrived = reader.next(taskId)
    await gql(writer, 'mutation ($id: ID!, $t: String!) { updateTask(id: $id, input: { title: $t }) { id } }', { id: taskId, t: `t${performance.now()}` })
    await arrived
    into.push(performance.now() - started)
  }
}

async function seed(server: BenchServer) {
  const { createWorkspace } = await gql<{ createWorkspace: { id: string } }>(server, 'mutation { createWorkspace(name: "bench") { id } }')
  const { createTask } = await gql<{ createTask: { id: string } }>(server, 'mutation ($w: ID!) { createTask(input: { workspaceId: $w, title: "p7" }) { id } }', { w: createWorkspace.id })
  return { workspaceId: createWorkspace.id, taskId: createTask.id }
}

const waitForSubscribers = async (servers: BenchServer[], n: number) => {
  for (const s of servers) while ((await s.call<number>('subscriptions')) < n) await sleep(10)
}

const cluster = await startPostgresCluster()
const redis = await startRedisServer()
const servers: BenchServer[] = []
const clients: Client[] = []
try {
  for (const name of ['p7_one', 'p7_two']) {
    await cluster.query(`CREATE DATABASE ${name}`)
    await deployMigrations('postgres', cluster.url(name))
  }
  const start = async (database: string, redisUrl?: string) => {
    const server = await startBenchServer({ env: { DATABASE_URL: cluster.url(database), ...(redisUrl ? { REDIS_URL: redisUrl } : {}) }, start: { skipMigrations: true } })
    servers.push(server)
    return server
  }
  const [solo, a, b] = await Promise.all([start('p7_one'), start('p7_two', redis.url), start('p7_two', redis.url)])

  const soloSeed = await seed(solo)
  const twoSeed = await seed(a)
  const soloFeed = await subscriber(solo, soloSeed.workspaceId)
  const onA = await subscriber(a, twoSeed.workspaceId)
  const onB = await subscriber(b, twoSeed.workspaceId)
  clients.push(soloFeed.client, onA.client, onB.client)
  await waitForSubscribers([solo, a, b], 1)

  const samples = { one: [] as number[], sameInstance: [] as number[], viaRedis: [] as number[], scratch: [] as number[] }
  await deltaLatencies(solo, soloFeed, soloSeed.taskId, WARMUP, samples.scratch)
  await deltaLatencies(a, onB, twoSeed.taskId, WARMUP, samples.scratch)
  for (let done = 0; done < DELTAS; done += BLOCK) {
    const n = Math.min(BLOCK, DELTAS - done)
    await deltaLatencies(solo, soloFeed, soloSeed.taskId, n, samples.one)
    await deltaLatencies(a, onB, twoSeed.taskId, n, samples.viaRedis)
    await deltaLatencies(a, onA, twoSeed.taskId, n, samples.sameInstance)
  }

  // Forwarding: A owns the session (it started it); B forwards each command to A over Redis.
  const { startSession } = await gql<{ startSession: { id: string } }>(a, 'mutation ($t: ID!) { startSession(input: { taskId: $t }) { id } }', { t: twoSeed.taskId })
  const refresh = 'mutation ($s: ID!) { refreshSessionGit(sessionId: $s) { id } }'
  const rtt = { local: [] as number[], forwarded: [] as number[] }
  const time = async (target: BenchServer, n: number, into?: number[]) => {
    for (let i = 0; i < n; i++) {
      const started = performance.now()
      await gql(target, refresh, { s: startSession.id })
      into?.push(performance.now() - started)
    }
  }
  await time(a, WARMUP)
  await time(b, WARMUP)
  for (let done = 0; done < COMMANDS; done += BLOCK) {
    const n = Math.min(BLOCK, COMMANDS - done)
    await time(a, n, rtt.local)
    await time(b, n, rtt.forwarded)
  }

  const p = (xs: number[], q: number) => quantile(xs, q)
  const overhead99 = p(samples.viaRedis, 0.99) - p(samples.one, 0.99)
  const oneLabel = 'one instance, in-process pub/sub'
  const delta = (q: string, where: string) => `updateTask on A → ${FEED} TaskStatusSummaryUpdated ${where}, ${q} (latency ratio)`
  const command = (q: string) => `refreshSessionGit round trip sent to B, forwarded to owner A, ${q} (latency ratio)`
  report({
    id: 'P7',
    title: 'two instances over Redis vs one (each instance its own process, one PostgreSQL)',
    rows: [
      { metric: delta('p50', 'on B'), value: p(samples.viaRedis, 0.5), unit: 'ms', baseline: { label: oneLabel, value: p(samples.one, 0.5) } },
      { metric: delta('p99', 'on B'), value: p(samples.viaRedis, 0.99), unit: 'ms', baseline: { label: oneLabel, value: p(samples.one, 0.99) }, goal: `≤ +20 ms (+${overhead99.toFixed(1)} ms)`, met: overhead99 <= 20 },
      { metric: delta('p99', 'on A (control)'), value: p(samples.sameInstance, 0.99), unit: 'ms', baseline: { label: oneLabel, value: p(samples.one, 0.99) } },
      { metric: command('p50'), value: p(rtt.forwarded, 0.5), unit: 'ms', baseline: { label: 'sent to the owner A', value: p(rtt.local, 0.5) } },
      { metric: command('p99'), value: p(rtt.forwarded, 0.99), unit: 'ms', baseline: { label: 'sent to the owner A', value: p(rtt.local, 0.99) } },
    ],
    notes: [
      `Delta latency is updateTask's round trip over HTTP (selection \`{ id }\`) + projection (load, derive, compare-and-set in PostgreSQL) + publish + delivery to a graphql-ws subscriber of the SDK's ${FEED} (subscribed after ClientBoot's feedCursor, the SDK's selection); ${DELTAS} sequential samples per case. Over Redis the p99 was ${overhead99.toFixed(1)} ms above one instance's (what crossing adds is one PUBLISH and one message read on loopback); the control, a subscriber on A of the same pair, was ${(p(samples.sameInstance, 0.99) - p(samples.one, 0.99)).toFixed(1)} ms above: on a loaded machine that much of the difference is noise between processes, not Redis.`,
      `Forwarding adds one Redis round trip each way and the owner's lease check (refreshSessionGit over HTTP, selection \`{ id }\`, ${COMMANDS} samples per side). Neither updateTask nor refreshSessionGit is an SDK operation: they are the triggers, not what the page sends.`,
    ],
  })
} finally {
  await Promise.all(clients.map((c) => c.dispose()))
  for (const s of servers.reverse()) await s.stop()
  await redis.stop()
  cluster.stop()
}
