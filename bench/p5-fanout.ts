// P5 fan-out: one summary delta of one task to 1,000 / 5,000 / 10,000 subscribers of its
// workspace feed (one subscription per connection) with the SDK's own operation, p50/p99 of the
// delivery latency from just before the store write that makes the revision to each client's
// arrival, throughput (deliveries per second), the server's CPU per delivery, and how long the
// subscriptions took to open. Baseline in the same run: a bare `ws` server broadcasting the very
// frame the feed sent to the same number of the same clients. The server, the baseline and the
// clients (a few worker processes) each run in processes of their own.
// Variants (BENCH_P5_VARIANTS): `sdk-resume`, resumed after boot.feedCursor as the SDK subscribes;
// `sdk-live`, the same operation without `after`.
import { print } from 'graphql'
import { ClientWorkspaceEventsDocument } from '../packages/client/src/generated/graphql.ts'
import { eventually } from '../test/support/wait.ts'
import { report, type Row } from './scenario.ts'
import { BENCH_ADMIN_TOKEN, bootFeedCursor, startBenchServer, type BenchServer } from './server-process.ts'
import { startClientFleet, type Arrivals, type ClientFleet, type Handshake } from './client-fleet.ts'
import { startRawWsServer } from './raw-ws-server.ts'
import type { FeedFixture } from './feed-handlers.ts'
import { quantile } from './support.ts'
import type { SelfTime } from './cpu-profile.ts'

const SIZES = (process.env.BENCH_P5_SUBSCRIBERS ?? '1000,5000,10000').split(',').map(Number)
const ROUNDS = Number(process.env.BENCH_P5_ROUNDS ?? 5)
const WORKERS = Number(process.env.BENCH_P5_WORKERS ?? 3)
/** Rounds under the CPU profiler, after the measured ones, of the SDK's resumed subscribers at the largest size and of raw ws. */
const PROFILE_ROUNDS = Number(process.env.BENCH_P5_PROFILE_ROUNDS ?? 3)
const OPEN_PROFILE_FILE = process.env.BENCH_P5_PROFILE_OPEN
const ROUND_TIMEOUT_MS = 30_000
/** Set-up waits (subscriptions registered, connections forgotten): bounded, generous for 10,000 on a loaded machine. */
const SETUP_TIMEOUT_MS = 180_000
const LARGEST = Math.max(...SIZES)
/** The first is the one plotted and profiled. */
const VARIANTS = (process.env.BENCH_P5_VARIANTS ?? 'sdk-resume,sdk-live').split(',')
/** Goals (issue 30): p99 and opening time at the largest size; throughput and CPU against raw ws at every size. */
const GOAL_P99_MS = 300
const GOAL_THROUGHPUT = 0.6
const GOAL_CPU = 2
const GOAL_OPEN = 3

interface Variant {
  id: string
  label: string
  payload(fixture: FeedFixture, feedCursor: string): { query: string; variables: Record<string, unknown> }
}

const SDK_QUERY = print(ClientWorkspaceEventsDocument)
const VARIANT_LIST: Variant[] = [
  { id: 'sdk-resume', label: 'SDK workspaceEvents with after', payload: (f, after) => ({ query: SDK_QUERY, variables: { workspaceId: f.workspaceId, after } }) },
  { id: 'sdk-live', label: 'SDK workspaceEvents without after', payload: (f) => ({ query: SDK_QUERY, variables: { workspaceId: f.workspaceId } }) },
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
async function rounds(fleet: ClientFleet, trigger: () => Promise<number>, settle: () => Promise<unknown>, cpu: () => Promise<number>, count = ROUNDS): Promise<Run & { sample?: string }> {
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
  for (let r = 0; r < count; r++) {
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

/** What one process under measure answers for a size: its rounds, how long its subscriptions took to open, and its profile if asked. */
interface Measured {
  run: Run & { sample?: string }
  openMs: number
  /** CPU time of the process under measure per subscription opened, in µs (with tracing on, its spans exported too). */
  openCpu: number
  profile?: SelfTime[]
}

interface Subject {
  trigger: () => Promise<number>
  settle: () => Promise<unknown>
  cpu: () => Promise<number>
  profileStart: () => Promise<unknown>
  profileStop: () => Promise<SelfTime[]>
}

/** The measured rounds, then (if asked) PROFILE_ROUNDS more under the CPU profiler, which is in no reported figure. */
async function measure(fleet: ClientFleet, subject: Subject, opened: { openMs: number; openCpu: number }, profile: boolean): Promise<Measured> {
  const run = await rounds(fleet, subject.trigger, subject.settle, subject.cpu)
  if (!profile) return { run, ...opened }
  await subject.profileStart()
  await rounds(fleet, subject.trigger, subject.settle, subject.cpu, PROFILE_ROUNDS)
  return { run, ...opened, profile: await subject.profileStop() }
}

async function timedOpen(fleet: ClientFleet, url: string, size: number, handshake: Handshake, subscribed: () => Promise<number>): Promise<number> {
  const started = performance.now()
  await open(fleet, url, size, handshake)
  await eventually(async () => (await subscribed()) === size, SETUP_TIMEOUT_MS)
  return performance.now() - started
}

async function measureServer(server: BenchServer, fleet: ClientFleet, fixture: FeedFixture, size: number, revision: { next: number }, variant: Variant, profile: boolean): Promise<Measured> {
  const payload = variant.payload(fixture, await bootFeedCursor(server, fixture.workspaceId))
  // BENCH_P5_PROFILE_OPEN=<file>: a CPU profile of the opening (connect, init, subscribe) written there.
  if (OPEN_PROFILE_FILE) await server.call('profileStart')
  const cpuBefore = await server.call<number>('cpu')
  const openMs = await timedOpen(fleet, server.wsUrl, size, { kind: 'subscribe', token: BENCH_ADMIN_TOKEN, payload }, () => server.call<number>('subscriptions'))
  // With tracing on, the opening's spans (one per subscription) are exported here, counted in the
  // opening's CPU, rather than whenever the batch timer fires, which may be amid the measured rounds.
  await server.call('flushTracing')
  const openCpu = ((await server.call<number>('cpu')) - cpuBefore) / size
  if (OPEN_PROFILE_FILE) await server.call('profileStop', { file: OPEN_PROFILE_FILE })
  console.info(`  ${size} subscribed (${variant.id}) in ${(openMs / 1000).toFixed(1)} s`)
  const measured = await measure(
    fleet,
    {
      trigger: () => server.call<number>('revise', { sessionId: fixture.sessionId, subagents: revision.next++ }),
      settle: () => server.call('idle'),
      cpu: () => server.call<number>('cpu'),
      profileStart: () => server.call('profileStart'),
      // BENCH_P5_PROFILE_FILE: the whole profile too (Chrome DevTools or speedscope open it).
      profileStop: () => server.call<SelfTime[]>('profileStop', { file: process.env.BENCH_P5_PROFILE_FILE }),
    },
    { openMs, openCpu },
    profile,
  )
  await fleet.closeAll()
  await eventually(async () => (await server.call<{ connections: number }>('tables')).connections === 0, SETUP_TIMEOUT_MS)
  return measured
}

async function measureRaw(fleet: ClientFleet, size: number, frame: string, profile: boolean): Promise<Measured> {
  const raw = await startRawWsServer()
  try {
    const cpuBefore = await raw.cpu()
    const openMs = await timedOpen(fleet, raw.url, size, { kind: 'subscribe', token: BENCH_ADMIN_TOKEN, payload: { query: 'subscription { raw }' } }, () => raw.subscribed())
    const openCpu = ((await raw.cpu()) - cpuBefore) / size
    const measured = await measure(
      fleet,
      { trigger: () => raw.broadcast(frame), settle: async () => undefined, cpu: () => raw.cpu(), profileStart: () => raw.profileStart(), profileStop: () => raw.profileStop() },
      { openMs, openCpu },
      profile,
    )
    await fleet.closeAll()
    return measured
  } finally {
    await raw.stop()
  }
}

const fleet = startClientFleet(WORKERS)
const server = await startBenchServer({ handlers: new URL('./feed-handlers.ts', import.meta.url) })
const rows: Row[] = []
const series: Record<string, Array<{ x: number; y: number }>> = { 'server p50': [], 'server p99': [], 'raw ws p50': [], 'raw ws p99': [] }
const frames = new Map<string, number>()
const profiles: { server?: SelfTime[]; raw?: SelfTime[] } = {}
let missing = 0
try {
  const fixture = await server.call<FeedFixture>('seed')
  const revision = { next: 1 }
  for (const size of SIZES) {
    /** Raw runs of this size by frame length: the variants' frames differ only in the cursor's digits. */
    const raws = new Map<number, Measured>()
    for (const variant of VARIANT_LIST.filter((v) => VARIANTS.includes(v.id))) {
      const profile = size === LARGEST && variant.id === VARIANTS[0]
      const ours = await measureServer(server, fleet, fixture, size, revision, variant, profile)
      if (!ours.run.sample) throw new Error('no frame arrived')
      const bytes = Buffer.byteLength(ours.run.sample)
      frames.set(variant.label, bytes)
      let raw = raws.get(bytes)
      if (!raw || (profile && !raw.profile)) raws.set(bytes, (raw = await measureRaw(fleet, size, ours.run.sample, profile)))
      if (profile) Object.assign(profiles, { server: ours.profile, raw: raw.profile })
      missing += ours.run.missing + raw.run.missing
      const [o, r] = [ours.run, raw.run]
      console.info(
        `  ${size} ${variant.id}: server p50 ${o.p50.toFixed(1)} p99 ${o.p99.toFixed(1)} ms, ${o.throughput.toFixed(0)}/s, ${o.cpuPerDelivery.toFixed(1)} µs CPU/delivery, opened in ${(ours.openMs / 1000).toFixed(1)} s; ` +
          `raw p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} ms, ${r.throughput.toFixed(0)}/s, ${r.cpuPerDelivery.toFixed(1)} µs CPU/delivery, opened in ${(raw.openMs / 1000).toFixed(1)} s (${o.deliveries} / ${r.deliveries} deliveries)`,
      )
      if (variant.id === VARIANTS[0]) {
        series['server p50']!.push({ x: size, y: o.p50 })
        series['server p99']!.push({ x: size, y: o.p99 })
        series['raw ws p50']!.push({ x: size, y: r.p50 })
        series['raw ws p99']!.push({ x: size, y: r.p99 })
      }
      const what = `${variant.label}, ${size.toLocaleString('en-US')} subscribers`
      const complete = o.missing === 0
      const baseline = (value: number) => ({ label: 'raw ws broadcast, same frame', value })
      rows.push(
        { metric: `p50 delivery (latency ratio), ${what}`, value: o.p50, unit: 'ms', baseline: baseline(r.p50) },
        {
          metric: `p99 delivery (latency ratio), ${what}`,
          value: o.p99,
          unit: 'ms',
          baseline: baseline(r.p99),
          ...(size === LARGEST && { goal: `≤ ${GOAL_P99_MS} ms`, met: o.p99 <= GOAL_P99_MS && complete }),
        },
        {
          metric: `throughput (deliveries/s ratio), ${what}`,
          value: o.throughput,
          unit: 'deliveries/s',
          baseline: baseline(r.throughput),
          goal: `≥ ${GOAL_THROUGHPUT}× raw`,
          met: o.throughput >= GOAL_THROUGHPUT * r.throughput && complete,
        },
        {
          metric: `server CPU per delivery, ${what}`,
          value: o.cpuPerDelivery,
          unit: 'µs',
          baseline: baseline(r.cpuPerDelivery),
          goal: `≤ ${GOAL_CPU}× raw`,
          met: o.cpuPerDelivery <= GOAL_CPU * r.cpuPerDelivery && complete,
        },
        {
          metric: `time to open the subscriptions, ${what}`,
          value: ours.openMs,
          unit: 'ms',
          baseline: { label: 'raw ws, same clients', value: raw.openMs },
          ...(size === LARGEST && { goal: `≤ ${GOAL_OPEN}× raw`, met: ours.openMs <= GOAL_OPEN * raw.openMs }),
        },
        { metric: `server CPU per subscription opened, ${what}`, value: ours.openCpu, unit: 'µs', baseline: { label: 'raw ws, same clients', value: raw.openCpu } },
      )
    }
  }
} finally {
  fleet.stop()
  await server.stop()
}

const profileNote = (who: string, top: SelfTime[] | undefined) =>
  top && `CPU profile, ${who} (${PROFILE_ROUNDS} extra rounds at ${LARGEST.toLocaleString('en-US')} subscribers, top self time): ${top.map((f) => `${f.name} ${(100 * f.share).toFixed(1)} %`).join('; ')}.`

report({
  id: 'P5',
  title: 'fan-out of one summary delta',
  rows,
  series,
  notes: [
    `${ROUNDS} deltas per size, each a real revision (a session's subagent count written through the store, derived by the projector, published on the workspace feed); latency from just before the store write to each client's arrival, wall clock shared between processes; frames: ${[...frames].map(([label, bytes]) => `${bytes} B (${label})`).join(', ')}.`,
    `Operation: every subscriber sends the SDK's own workspaceEvents subscription (ClientWorkspaceEvents in packages/client/src/operations/subscriptions.graphql, the selection the SDK and the page use), with \`after\` set to boot.feedCursor as the SDK does after its boot, or without it. Throughput is deliveries per second from each trigger to its round's last arrival; CPU is the process's user + system time over the measured rounds (the server's includes the store write and projection) per delivery; both against the raw ws broadcast of the same frame to the same clients. Opening: from the first connection to the last subscription registered.`,
    `Clients: ${WORKERS} worker processes of hand-written graphql-transport-ws clients, the same in both runs; the baseline is a bare ws server writing the same frame bytes, with no store, projector, GraphQL or scheduler.`,
    ...[profileNote('server', profiles.server), profileNote('raw ws', profiles.raw)].filter((n): n is string => !!n),
    'Limits: every process shares the machine\'s two cores, so the clients\' reading is part of both figures.',
    ...(missing > 0 ? [`${missing} deliveries did not arrive within ${ROUND_TIMEOUT_MS / 1000} s.`] : []),
  ],
})
