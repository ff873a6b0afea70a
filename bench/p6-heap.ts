// P6 heap: what the server keeps (heap after full GC, in its own process) per idle connection
// holding one subscription of the SDK's workspaceEvents operation (resumed after boot.feedCursor
// as the SDK subscribes, and without `after`), and per subscribe/complete cycle of the SDK's
// sessionEvents operation on one connection.
// Baselines in the same run: per idle connection, a plain `ws` connection to a bare ws server
// (no GraphQL) in a process of its own; per cycle, a query round trip on the same connection.
// Clients run in worker processes (idle connections) and in this process (cycles).
import { print } from 'graphql'
import { ClientSessionEventsDocument, ClientViewerDocument, ClientWorkspaceEventsDocument } from '../packages/client/src/generated/graphql.ts'
import { rawGraphqlWs } from '../test/support/raw-ws.ts'
import { eventually } from '../test/support/wait.ts'
import { report, scaled } from './scenario.ts'
import { BENCH_ADMIN_TOKEN, bootFeedCursor, startBenchServer, type BenchServer } from './server-process.ts'
import { startClientFleet, type ClientFleet, type Handshake } from './client-fleet.ts'
import { startRawWsServer } from './raw-ws-server.ts'
import type { FeedFixture } from './feed-handlers.ts'

// Short (BENCH_SHORT=1): 200 connections, 200 cycles, 0.5 s idle windows.
const CONNECTIONS = Number(process.env.BENCH_P6_CONNECTIONS ?? scaled(1000, 200))
const CYCLES = Number(process.env.BENCH_P6_CYCLES ?? scaled(5000, 200))
const WARMUP = Number(process.env.BENCH_P6_WARMUP ?? scaled(500, 50))
/** Set-up waits (subscriptions registered, connections forgotten): bounded, generous for 10,000 on a loaded machine. */
const SETUP_TIMEOUT_MS = 180_000
const GOAL_CONNECTION_BYTES = 8 * 1024
/** The next step (issue 45): an idle subscribed connection in 5 KB. */
const NEXT_GOAL_CONNECTION_BYTES = 5 * 1024
const GOAL_CYCLE_BYTES = 200
/** Issue 45: what 1,000 idle subscribed connections add, and the server alone idle. */
const GOAL_CONNECTIONS_IDLE_MS_PER_S = 2
/** The gateway's keepalive interval (src/delivery/ws-gateway.ts). */
const SERVER_KEEPALIVE_MS = 12_000
const GOAL_ALONE_IDLE_MS_PER_S = 5
/** Idle time measured: one keepalive interval (12 s), so each connection is pinged once. */
const IDLE_MS = Number(process.env.BENCH_P6_IDLE_MS ?? scaled(12_000, 500))

/**
 * Heap kept per connection: open `count`, wait until the server holds them, measure, close. With
 * `cpu`, also the CPU the process spends while they sit idle for IDLE_MS (a whole keepalive
 * interval), in ms per second.
 */
async function perConnection(fleet: ClientFleet, url: string, handshake: Handshake, heap: () => Promise<number>, held: () => Promise<boolean>, cpu?: () => Promise<number>) {
  const before = await heap()
  const { failed } = await fleet.open(url, CONNECTIONS, handshake)
  if (failed > 0) throw new Error(`${failed} of ${CONNECTIONS} connections to ${url} failed`)
  await eventually(held, SETUP_TIMEOUT_MS)
  const after = await heap()
  const idleCpuMsPerS = cpu && (await idleCpu(cpu))
  await fleet.closeAll()
  return { bytes: (after - before) / CONNECTIONS, idleCpuMsPerS }
}


/** CPU (ms per second) a process spends over IDLE_MS with nothing happening. */
async function idleCpu(cpu: () => Promise<number>): Promise<number> {
  const [start, at] = [await cpu(), performance.now()]
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS))
  return (await cpu() - start) / 1000 / ((performance.now() - at) / 1000)
}

/** Heap kept per cycle over CYCLES cycles on one connection, and the gateway's tables afterwards. */
async function perCycle(server: BenchServer, fixture: FeedFixture) {
  const client = await rawGraphqlWs(server.wsUrl, BENCH_ADMIN_TOKEN)
  const sessionQuery = print(ClientSessionEventsDocument)
  const viewerQuery = print(ClientViewerDocument)
  let n = 0
  const query = async () => {
    const id = `q${n++}`
    client.send({ id, type: 'subscribe', payload: { query: viewerQuery } })
    await client.waitFor((f) => f.id === id && f.type === 'complete')
    client.frames.length = 0
  }
  const subscribeThenComplete = async () => {
    const id = `s${n++}`
    client.send({ id, type: 'subscribe', payload: { query: sessionQuery, variables: { sessionId: fixture.sessionId } } })
    await client.waitFor((f) => f.id === id && f.type === 'next') // SessionJoined: the subscription is live
    client.send({ id, type: 'complete' })
    client.frames.length = 0
  }
  const kept = async (cycle: () => Promise<void>) => {
    const before = await server.call<number>('heap')
    for (let i = 0; i < CYCLES; i++) await cycle()
    await query() // every complete before it has been handled once its answer is back
    const after = await server.call<number>('heap')
    return (after - before) / CYCLES
  }
  for (let i = 0; i < WARMUP; i++) {
    await subscribeThenComplete()
    await query()
  }
  const queryBytes = await kept(query)
  const cycleBytes = await kept(subscribeThenComplete)
  const tables = await server.call<Record<string, number>>('tables')
  client.socket.close()
  return { queryBytes, cycleBytes, tables }
}

const fleet = startClientFleet(2)
const server = await startBenchServer({ handlers: new URL('./feed-handlers.ts', import.meta.url) })
const raw = await startRawWsServer()
const kb = (bytes: number) => bytes / 1024
let result
try {
  const fixture = await server.call<FeedFixture>('seed')
  const token = BENCH_ADMIN_TOKEN
  const cursor = await bootFeedCursor(server, fixture.workspaceId)
  const feedQuery = print(ClientWorkspaceEventsDocument)
  const resumed: Handshake = { kind: 'subscribe', token, payload: { query: feedQuery, variables: { workspaceId: fixture.workspaceId, after: cursor } } }
  const live: Handshake = { kind: 'subscribe', token, payload: { query: feedQuery, variables: { workspaceId: fixture.workspaceId } } }
  const serverHeap = () => server.call<number>('heap')
  const serverCpu = () => server.call<number>('cpu')
  const tables = () => server.call<{ connections: number; subscriptions: number; detached: number }>('tables')
  // Warm-up: code compiled, caches and pools filled, so what stays afterwards is per connection.
  for (let i = 0; i < 2; i++) {
    await fleet.open(server.wsUrl, Math.min(200, CONNECTIONS), resumed)
    await eventually(async () => (await tables()).subscriptions === Math.min(200, CONNECTIONS), SETUP_TIMEOUT_MS)
    await fleet.closeAll()
    await eventually(async () => (await tables()).connections === 0, SETUP_TIMEOUT_MS)
  }
  // Each process alone, idle, its start-up and the warm-up over, before any session is opened (the
  // cycles below open one, which starts its agent): what its own timers cost.
  const aloneMsPerS = await idleCpu(serverCpu)
  const plainAloneMsPerS = await idleCpu(() => raw.cpu())
  const subscribedRun = await perConnection(fleet, server.wsUrl, resumed, serverHeap, async () => (await tables()).detached === CONNECTIONS, () => server.call<number>('cpu'))
  const subscribed = subscribedRun.bytes
  await eventually(async () => (await tables()).connections === 0, SETUP_TIMEOUT_MS)
  const subscribedLive = (await perConnection(fleet, server.wsUrl, live, serverHeap, async () => (await tables()).detached === CONNECTIONS)).bytes
  await eventually(async () => (await tables()).connections === 0, SETUP_TIMEOUT_MS)
  const acked = (await perConnection(fleet, server.wsUrl, { kind: 'ack', token }, serverHeap, async () => (await tables()).connections === CONNECTIONS)).bytes
  await eventually(async () => (await tables()).connections === 0, SETUP_TIMEOUT_MS)
  const plainRun = await perConnection(fleet, raw.url, { kind: 'none' }, () => raw.heap(), async () => (await raw.connections()) === CONNECTIONS, () => raw.cpu())
  const plain = plainRun.bytes
  // The same plain connections pinged as the server pings them: what keepalive alone costs.
  const pinging = await startRawWsServer({ keepaliveMs: SERVER_KEEPALIVE_MS })
  const pingedRun = await perConnection(fleet, pinging.url, { kind: 'none' }, () => pinging.heap(), async () => (await pinging.connections()) === CONNECTIONS, () => pinging.cpu()).finally(() => pinging.stop())
  const cycles = await perCycle(server, fixture)
  await eventually(async () => (await tables()).connections === 0 && (await raw.connections()) === 0, SETUP_TIMEOUT_MS)
  // Last, as memory-reducing collections change what later normal ones see: both sides measured
  // with them (gc flavor last-resort, what V8 runs before an out-of-memory).
  const reducedSubscribed = (await perConnection(fleet, server.wsUrl, resumed, () => server.call<number>('heapReduced'), async () => (await tables()).detached === CONNECTIONS)).bytes
  await eventually(async () => (await tables()).connections === 0, SETUP_TIMEOUT_MS)
  const reducedPlain = (await perConnection(fleet, raw.url, { kind: 'none' }, () => raw.heapReduced(), async () => (await raw.connections()) === CONNECTIONS)).bytes
  const leftover = Object.entries(cycles.tables).filter(([name, size]) => name !== 'connections' && size > 0)
  result = {
    rows: [
      {
        metric: `heap per idle connection with one SDK workspaceEvents subscription, with after (${CONNECTIONS})`,
        value: kb(subscribed),
        unit: 'KB',
        baseline: { label: 'plain ws connection, no GraphQL', value: kb(plain) },
        goal: `≤ ${GOAL_CONNECTION_BYTES / 1024} KB`,
        met: subscribed <= GOAL_CONNECTION_BYTES,
      },
      {
        metric: `the same, against the next step (${CONNECTIONS})`,
        value: kb(subscribed),
        unit: 'KB',
        baseline: { label: 'plain ws connection, no GraphQL', value: kb(plain) },
        goal: `≤ ${NEXT_GOAL_CONNECTION_BYTES / 1024} KB`,
        met: subscribed <= NEXT_GOAL_CONNECTION_BYTES,
      },
      {
        metric: `the same after memory-reducing collections (what V8 frees before it runs out) (${CONNECTIONS})`,
        value: kb(reducedSubscribed),
        unit: 'KB',
        baseline: { label: 'plain ws connection, no GraphQL, same collections', value: kb(reducedPlain) },
      },
      {
        metric: `heap per idle connection with one SDK workspaceEvents subscription, without after (${CONNECTIONS})`,
        value: kb(subscribedLive),
        unit: 'KB',
        baseline: { label: 'plain ws connection, no GraphQL', value: kb(plain) },
        goal: `≤ ${GOAL_CONNECTION_BYTES / 1024} KB`,
        met: subscribedLive <= GOAL_CONNECTION_BYTES,
      },
      {
        metric: `CPU while idle, ${CONNECTIONS} connections each with one SDK workspaceEvents subscription (with after), per second`,
        value: subscribedRun.idleCpuMsPerS!,
        unit: 'ms/s',
        baseline: { label: 'plain ws connections, no GraphQL', value: plainRun.idleCpuMsPerS! },
      },
      {
        metric: `CPU while idle that ${CONNECTIONS} subscribed connections add to the server, per second`,
        value: subscribedRun.idleCpuMsPerS! - aloneMsPerS,
        unit: 'ms/s',
        baseline: { label: 'plain ws connections, no GraphQL', value: plainRun.idleCpuMsPerS! },
        goal: `≤ ${GOAL_CONNECTIONS_IDLE_MS_PER_S} ms/s`,
        met: subscribedRun.idleCpuMsPerS! - aloneMsPerS <= GOAL_CONNECTIONS_IDLE_MS_PER_S,
      },
      {
        metric: `CPU while idle that ${CONNECTIONS} subscribed connections add, against plain ws connections pinged as often (keepalive alone), per second`,
        value: subscribedRun.idleCpuMsPerS! - aloneMsPerS,
        unit: 'ms/s',
        baseline: { label: `plain ws connections, each pinged every ${SERVER_KEEPALIVE_MS / 1000} s`, value: pingedRun.idleCpuMsPerS! - plainAloneMsPerS },
      },
      {
        metric: 'CPU of the server alone while idle (no connection), per second',
        value: aloneMsPerS,
        unit: 'ms/s',
        baseline: { label: 'plain ws server, no connection', value: plainAloneMsPerS },
        goal: `≤ ${GOAL_ALONE_IDLE_MS_PER_S} ms/s`,
        met: aloneMsPerS <= GOAL_ALONE_IDLE_MS_PER_S,
      },
      { metric: `heap per idle connection_ack'ed connection, no subscription (${CONNECTIONS})`, value: kb(acked), unit: 'KB', baseline: { label: 'plain ws connection, no GraphQL', value: kb(plain) } },
      {
        metric: `heap per SDK sessionEvents subscribe/complete cycle (${CYCLES} on one connection)`,
        value: cycles.cycleBytes,
        unit: 'B',
        baseline: { label: 'SDK viewer query round trip', value: cycles.queryBytes },
        goal: `≤ ${GOAL_CYCLE_BYTES} B`,
        met: cycles.cycleBytes <= GOAL_CYCLE_BYTES && leftover.length === 0,
      },
    ],
    notes: [
      'Heap used after four full collections in the server process, after minus before, divided by the count (the goals are judged on it); then after memory-reducing collections (gc with flavor last-resort, as V8 runs before an out-of-memory), which free several KB per connection more on both sides; the clients run in other processes. Idle CPU: the process\'s user + system time over one keepalive interval with the connections open and nothing happening (the server pings each once; the plain ws server pings none).',
      `After the cycles the gateway holds ${JSON.stringify(cycles.tables)}${leftover.length > 0 ? ' (entries left over: a leak)' : ''}.`,
      'Limits: the per-connection figure includes what ws and Node keep for any socket (the plain baseline); the rest is graphql-ws, the scheduler and one live feed subscription.',
      `Runtime: ${process.env.BENCH_RUNTIME === 'tsx' ? 'tsx, as npm start runs the sources (esbuild keepNames: a 256-byte property store on every named closure)' : "Node's own type transform, which emits the code as written, as npm run build does for npm run start:prod"} (bench/runtime.ts; BENCH_RUNTIME=tsx measures the development path).`,
    ],
  }
} finally {
  fleet.stop()
  await Promise.all([server.stop(), raw.stop()])
}

report({ id: 'P6', title: 'heap per connection and per subscription cycle', ...result })
