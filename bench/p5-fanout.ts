// P5 fan-out: one summary delta of one task to 1,000 / 5,000 / 10,000 subscribers of its
// workspace feed (workspaceEvents, one subscription per connection), p50/p99 of the delivery
// latency from just before the store write that makes the revision to each client's arrival.
// Baseline in the same run: a bare `ws` server broadcasting the very frame the feed sent to the
// same number of the same clients. The server, the baseline and the clients (a few worker
// processes) each run in processes of their own.
import path from 'node:path'
import { print } from 'graphql'
import { WorkspaceEventsDocument } from '../test/generated/graphql.ts'
import { eventually } from '../test/support/wait.ts'
import { report, type Row } from './scenario.ts'
import { BENCH_ADMIN_TOKEN, startBenchServer, type BenchServer } from './server-process.ts'
import { startClientFleet, type Arrivals, type ClientFleet, type Handshake } from './client-fleet.ts'
import { startRawWsServer } from './raw-ws-server.ts'
import type { FeedFixture } from './feed-handlers.ts'
import { quantile } from './support.ts'

const SIZES = (process.env.BENCH_P5_SUBSCRIBERS ?? '1000,5000,10000').split(',').map(Number)
const ROUNDS = Number(process.env.BENCH_P5_ROUNDS ?? 5)
const WORKERS = Number(process.env.BENCH_P5_WORKERS ?? 3)
/** Set to a folder: the server process writes a V8 CPU profile of each size's rounds there. */
const CPU_PROFILE_DIR = process.env.BENCH_P5_CPU_PROF
const ROUND_TIMEOUT_MS = 30_000
/** Set-up waits (subscriptions registered, connections forgotten): bounded, generous for 10,000 on a loaded machine. */
const SETUP_TIMEOUT_MS = 180_000
const GOAL_P99_MS = 500
const GOAL_TIMES_RAW = 2
const LARGEST = Math.max(...SIZES)


interface Run {
  p50: number
  p99: number
  deliveries: number
  missing: number
}

/**
 * Rounds of one trigger each: arm the clients, trigger (the trigger reports its own start time),
 * collect every client's arrival. Warm-up rounds first, until one reaches every client.
 */
async function rounds(fleet: ClientFleet, trigger: () => Promise<number>, settle: () => Promise<unknown>): Promise<Run & { sample?: string }> {
  const round = async (): Promise<Arrivals & { started: number }> => {
    await fleet.arm()
    const started = await trigger()
    const arrivals = await fleet.collect(ROUND_TIMEOUT_MS)
    await settle()
    return { ...arrivals, started }
  }
  for (let warm = 0; ; warm++) {
    if ((await round()).missing === 0) break
    if (warm === 4) throw new Error('warm-up rounds never reached every client')
  }
  const latencies: number[] = []
  let missing = 0
  let sample: string | undefined
  for (let r = 0; r < ROUNDS; r++) {
    const arrivals = await round()
    latencies.push(...arrivals.times.map((t) => t - arrivals.started))
    missing += arrivals.missing
    sample ??= arrivals.sample
  }
  latencies.sort((a, b) => a - b)
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), deliveries: latencies.length, missing, sample }
}

async function open(fleet: ClientFleet, url: string, size: number, handshake: Handshake) {
  const { failed } = await fleet.open(url, size, handshake)
  if (failed > 0) throw new Error(`${failed} of ${size} connections to ${url} failed`)
}

async function measureServer(server: BenchServer, fleet: ClientFleet, fixture: FeedFixture, size: number, revision: { next: number }) {
  const payload = { query: print(WorkspaceEventsDocument), variables: { workspaceId: fixture.workspaceId } }
  const started = performance.now()
  await open(fleet, server.wsUrl, size, { kind: 'subscribe', token: BENCH_ADMIN_TOKEN, payload })
  await eventually(async () => (await server.call<number>('subscriptions')) === size, SETUP_TIMEOUT_MS)
  console.info(`  ${size} subscribed in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  if (CPU_PROFILE_DIR) await server.call('profileStart')
  const run = await rounds(
    fleet,
    () => server.call<number>('revise', { sessionId: fixture.sessionId, subagents: revision.next++ }),
    () => server.call('idle'),
  )
  if (CPU_PROFILE_DIR) await server.call('profileStop', { file: path.join(CPU_PROFILE_DIR, `p5-server-${size}.cpuprofile`) })
  await fleet.closeAll()
  await eventually(async () => (await server.call<{ connections: number }>('tables')).connections === 0, SETUP_TIMEOUT_MS)
  return run
}

async function measureRaw(fleet: ClientFleet, size: number, frame: string) {
  const raw = await startRawWsServer()
  try {
    await open(fleet, raw.url, size, { kind: 'subscribe', token: BENCH_ADMIN_TOKEN, payload: { query: 'subscription { raw }' } })
    await eventually(async () => (await raw.subscribed()) === size, SETUP_TIMEOUT_MS)
    const run = await rounds(fleet, () => raw.broadcast(frame), async () => undefined)
    await fleet.closeAll()
    return run
  } finally {
    await raw.stop()
  }
}

const fleet = startClientFleet(WORKERS)
const server = await startBenchServer({ handlers: new URL('./feed-handlers.ts', import.meta.url) })
const rows: Row[] = []
const series: Record<string, Array<{ x: number; y: number }>> = { 'server p50': [], 'server p99': [], 'raw ws p50': [], 'raw ws p99': [] }
let frameBytes = 0
let missing = 0
try {
  const fixture = await server.call<FeedFixture>('seed')
  const revision = { next: 1 }
  for (const size of SIZES) {
    const ours = await measureServer(server, fleet, fixture, size, revision)
    if (!ours.sample) throw new Error('no frame arrived')
    frameBytes = Buffer.byteLength(ours.sample)
    const raw = await measureRaw(fleet, size, ours.sample)
    missing += ours.missing + raw.missing
    console.info(`  ${size}: server p50 ${ours.p50.toFixed(1)} p99 ${ours.p99.toFixed(1)} ms, raw p50 ${raw.p50.toFixed(1)} p99 ${raw.p99.toFixed(1)} ms (${ours.deliveries} / ${raw.deliveries} deliveries)`)
    series['server p50']!.push({ x: size, y: ours.p50 })
    series['server p99']!.push({ x: size, y: ours.p99 })
    series['raw ws p50']!.push({ x: size, y: raw.p50 })
    series['raw ws p99']!.push({ x: size, y: raw.p99 })
    const subscribers = size.toLocaleString('en-US')
    const withinRaw = ours.p99 <= GOAL_TIMES_RAW * raw.p99
    rows.push(
      { metric: `p50 delivery, ${subscribers} subscribers`, value: ours.p50, unit: 'ms', baseline: { label: 'raw ws broadcast', value: raw.p50 } },
      size === LARGEST
        ? {
            metric: `p99 delivery, ${subscribers} subscribers`,
            value: ours.p99,
            unit: 'ms',
            baseline: { label: 'raw ws broadcast', value: raw.p99 },
            goal: `≤ ${GOAL_P99_MS} ms and ≥ 0.5× raw`,
            met: ours.p99 <= GOAL_P99_MS && withinRaw && ours.missing === 0,
          }
        : {
            metric: `p99 delivery, ${subscribers} subscribers`,
            value: ours.p99,
            unit: 'ms',
            baseline: { label: 'raw ws broadcast', value: raw.p99 },
            goal: '≥ 0.5× raw',
            met: withinRaw && ours.missing === 0,
          },
    )
  }
} finally {
  fleet.stop()
  await server.stop()
}

report({
  id: 'P5',
  title: 'fan-out of one summary delta',
  rows,
  series,
  notes: [
    `${ROUNDS} deltas per size, each a real revision (a session's subagent count written through the store, derived by the projector, published on the workspace feed); latency from just before the store write to each client's arrival, wall clock shared between processes; ${frameBytes}-byte frame.`,
    `Clients: ${WORKERS} worker processes of hand-written graphql-transport-ws clients, the same in both runs; the baseline is a bare ws server writing the same frame bytes, with no store, projector, GraphQL or scheduler.`,
    "Limits: every process shares the machine's cores, so the clients' reading is part of both figures. The server's share is one store write and projection, one execution and one serialization per event (cohorts), then per connection a frame string, its scheduler and ws's write: past a few thousand subscribers the socket writes dominate, as they do for the baseline.",
    ...(missing > 0 ? [`${missing} deliveries did not arrive within ${ROUND_TIMEOUT_MS / 1000} s.`] : []),
  ],
})
