// P5 fan-out: one summary delta of one task to 1,000 / 5,000 / 10,000 subscribers of its
// workspace feed (workspaceEvents, one subscription per connection), p50/p99 of the delivery
// latency from just before the store write that makes the revision to each client's arrival.
// Baseline in the same run: a bare `ws` server broadcasting the very frame the feed sent to the
// same number of the same clients. The server, the baseline and the clients (a few worker
// processes) each run in processes of their own.
// Variants (BENCH_P5_VARIANTS): `feed`, the switcher's selection, live; `sdk-resume`, the SDK's own
// operation (src/client/operations) resumed after boot.feedCursor as the SDK subscribes; `sdk-live`,
// the same operation without `after`. The SDK rows also state throughput (deliveries per second from
// the trigger to a round's last arrival) and the server's CPU time per delivery, each against raw ws.
import path from 'node:path'
import { print } from 'graphql'
import { WorkspaceEventsDocument } from '../test/generated/graphql.ts'
import { ClientWorkspaceEventsDocument } from '../src/client/generated/graphql.ts'
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
const VARIANTS = (process.env.BENCH_P5_VARIANTS ?? 'feed,sdk-resume,sdk-live').split(',')
/** Goals of the SDK rows (issue 30): p99 at the largest size; throughput and CPU against raw ws at every size. */
const SDK_GOAL_P99_MS = 300
const SDK_GOAL_THROUGHPUT = 0.6
const SDK_GOAL_CPU = 2

interface Variant {
  id: string
  label: string
  payload(fixture: FeedFixture, feedCursor: string): { query: string; variables: Record<string, unknown> }
}

const SDK_QUERY = print(ClientWorkspaceEventsDocument)
const VARIANT_LIST: Variant[] = [
  { id: 'feed', label: '', payload: (f) => ({ query: print(WorkspaceEventsDocument), variables: { workspaceId: f.workspaceId } }) },
  { id: 'sdk-resume', label: 'SDK operation with after', payload: (f, after) => ({ query: SDK_QUERY, variables: { workspaceId: f.workspaceId, after } }) },
  { id: 'sdk-live', label: 'SDK operation without after', payload: (f) => ({ query: SDK_QUERY, variables: { workspaceId: f.workspaceId } }) },
]
for (const id of VARIANTS) if (!VARIANT_LIST.some((v) => v.id === id)) throw new Error(`unknown P5 variant ${id}`)


interface Run {
  p50: number
  p99: number
  deliveries: number
  missing: number
  /** Deliveries per second: every measured round's deliveries over the time from its trigger to its last arrival. */
  throughput: number
  /** CPU time (user + system) of the process under measure per delivery, over the measured rounds, in µs. */
  cpuPerDelivery: number
}

/**
 * Rounds of one trigger each: arm the clients, trigger (the trigger reports its own start time),
 * collect every client's arrival. Warm-up rounds first, until one reaches every client.
 */
async function rounds(fleet: ClientFleet, trigger: () => Promise<number>, settle: () => Promise<unknown>, cpu: () => Promise<number>): Promise<Run & { sample?: string }> {
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
  let span = 0
  const cpuBefore = await cpu()
  for (let r = 0; r < ROUNDS; r++) {
    const arrivals = await round()
    const times = arrivals.times.map((t) => t - arrivals.started)
    latencies.push(...times)
    span += times.reduce((a, b) => Math.max(a, b), 0)
    missing += arrivals.missing
    sample ??= arrivals.sample
  }
  const cpuUsed = (await cpu()) - cpuBefore
  latencies.sort((a, b) => a - b)
  const deliveries = latencies.length
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), deliveries, missing, sample, throughput: (deliveries / span) * 1000, cpuPerDelivery: cpuUsed / deliveries }
}

async function open(fleet: ClientFleet, url: string, size: number, handshake: Handshake) {
  const { failed } = await fleet.open(url, size, handshake)
  if (failed > 0) throw new Error(`${failed} of ${size} connections to ${url} failed`)
}

/** The cursor a switcher keeps from its first paint: boot(workspaceId) { feedCursor }. */
async function bootFeedCursor(server: BenchServer, workspaceId: string): Promise<string> {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
    body: JSON.stringify({ query: 'query($id: ID!) { boot(workspaceId: $id) { feedCursor } }', variables: { id: workspaceId } }),
  })
  const body = (await response.json()) as { data?: { boot: { feedCursor: string } }; errors?: unknown }
  if (!body.data) throw new Error(`boot failed: ${JSON.stringify(body.errors)}`)
  return body.data.boot.feedCursor
}

async function measureServer(server: BenchServer, fleet: ClientFleet, fixture: FeedFixture, size: number, revision: { next: number }, variant: Variant) {
  const payload = variant.payload(fixture, await bootFeedCursor(server, fixture.workspaceId))
  const started = performance.now()
  await open(fleet, server.wsUrl, size, { kind: 'subscribe', token: BENCH_ADMIN_TOKEN, payload })
  await eventually(async () => (await server.call<number>('subscriptions')) === size, SETUP_TIMEOUT_MS)
  console.info(`  ${size} subscribed (${variant.id}) in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  if (CPU_PROFILE_DIR) await server.call('profileStart')
  const run = await rounds(
    fleet,
    () => server.call<number>('revise', { sessionId: fixture.sessionId, subagents: revision.next++ }),
    () => server.call('idle'),
    () => server.call<number>('cpu'),
  )
  if (CPU_PROFILE_DIR) await server.call('profileStop', { file: path.join(CPU_PROFILE_DIR, `p5-server-${variant.id}-${size}.cpuprofile`) })
  await fleet.closeAll()
  await eventually(async () => (await server.call<{ connections: number }>('tables')).connections === 0, SETUP_TIMEOUT_MS)
  return run
}

async function measureRaw(fleet: ClientFleet, size: number, frame: string) {
  const raw = await startRawWsServer()
  try {
    await open(fleet, raw.url, size, { kind: 'subscribe', token: BENCH_ADMIN_TOKEN, payload: { query: 'subscription { raw }' } })
    await eventually(async () => (await raw.subscribed()) === size, SETUP_TIMEOUT_MS)
    const run = await rounds(fleet, () => raw.broadcast(frame), async () => undefined, () => raw.cpu())
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
let sdkFrameBytes = 0
let missing = 0
try {
  const fixture = await server.call<FeedFixture>('seed')
  const revision = { next: 1 }
  for (const size of SIZES) {
    /** Raw runs of this size by frame length: the SDK variants' frames differ only in the cursor's digits. */
    const raws = new Map<number, Run>()
    for (const variant of VARIANT_LIST.filter((v) => VARIANTS.includes(v.id))) {
      const ours = await measureServer(server, fleet, fixture, size, revision, variant)
      if (!ours.sample) throw new Error('no frame arrived')
      const bytes = Buffer.byteLength(ours.sample)
      let raw = raws.get(bytes)
      if (!raw) raws.set(bytes, (raw = await measureRaw(fleet, size, ours.sample)))
      missing += ours.missing + raw.missing
      console.info(
        `  ${size} ${variant.id}: server p50 ${ours.p50.toFixed(1)} p99 ${ours.p99.toFixed(1)} ms, ${ours.throughput.toFixed(0)}/s, ${ours.cpuPerDelivery.toFixed(1)} µs CPU/delivery; ` +
          `raw p50 ${raw.p50.toFixed(1)} p99 ${raw.p99.toFixed(1)} ms, ${raw.throughput.toFixed(0)}/s, ${raw.cpuPerDelivery.toFixed(1)} µs CPU/delivery (${ours.deliveries} / ${raw.deliveries} deliveries)`,
      )
      const subscribers = size.toLocaleString('en-US')
      if (variant.id === 'feed') {
        frameBytes = bytes
        series['server p50']!.push({ x: size, y: ours.p50 })
        series['server p99']!.push({ x: size, y: ours.p99 })
        series['raw ws p50']!.push({ x: size, y: raw.p50 })
        series['raw ws p99']!.push({ x: size, y: raw.p99 })
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
        continue
      }
      sdkFrameBytes = bytes
      const what = `${variant.label}, ${subscribers} subscribers`
      const complete = ours.missing === 0
      rows.push(
        { metric: `p50 delivery, ${what}`, value: ours.p50, unit: 'ms', baseline: { label: 'raw ws broadcast', value: raw.p50 } },
        {
          metric: `p99 delivery, ${what}`,
          value: ours.p99,
          unit: 'ms',
          baseline: { label: 'raw ws broadcast', value: raw.p99 },
          ...(size === LARGEST && { goal: `≤ ${SDK_GOAL_P99_MS} ms`, met: ours.p99 <= SDK_GOAL_P99_MS && complete }),
        },
        {
          metric: `throughput, ${what}`,
          value: ours.throughput,
          unit: 'deliveries/s',
          baseline: { label: 'raw ws broadcast', value: raw.throughput },
          goal: `≥ ${SDK_GOAL_THROUGHPUT}× raw`,
          met: ours.throughput >= SDK_GOAL_THROUGHPUT * raw.throughput && complete,
        },
        {
          metric: `server CPU per delivery, ${what}`,
          value: ours.cpuPerDelivery,
          unit: 'µs',
          baseline: { label: 'raw ws broadcast', value: raw.cpuPerDelivery },
          goal: `≤ ${SDK_GOAL_CPU}× raw`,
          met: ours.cpuPerDelivery <= SDK_GOAL_CPU * raw.cpuPerDelivery && complete,
        },
      )
    }
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
    `${ROUNDS} deltas per size, each a real revision (a session's subagent count written through the store, derived by the projector, published on the workspace feed); latency from just before the store write to each client's arrival, wall clock shared between processes; ${[frameBytes && `${frameBytes}-byte frame`, sdkFrameBytes && `${sdkFrameBytes}-byte frame with the SDK's operation`].filter(Boolean).join(', ')}.`,
    "SDK rows: every subscriber sends the SDK's own workspaceEvents operation (src/client/operations/subscriptions.graphql), with `after` set to boot.feedCursor as the SDK does, or without it. Throughput is deliveries per second from each trigger to its round's last arrival; CPU is the process's user + system time over the measured rounds (the server's includes the store write and projection) per delivery; both against the raw ws broadcast of the same frame to the same clients.",
    `Clients: ${WORKERS} worker processes of hand-written graphql-transport-ws clients, the same in both runs; the baseline is a bare ws server writing the same frame bytes, with no store, projector, GraphQL or scheduler.`,
    "Limits: every process shares the machine's cores, so the clients' reading is part of both figures. The server's share is one store write and projection, one execution and one serialization per event (cohorts), then per connection a frame string, its scheduler and ws's write: past a few thousand subscribers the socket writes dominate, as they do for the baseline.",
    ...(missing > 0 ? [`${missing} deliveries did not arrive within ${ROUND_TIMEOUT_MS / 1000} s.`] : []),
  ],
})
