// P5 fan-out: one change of one task to 1,000 / 10,000 / 20,000 subscribers of its workspace feed
// (one subscription per connection, the SDK's own operation). Two kinds of change, each measured
// apart, both real writes whose cost is what such a change costs in production:
// - task edit: the updateTask mutation over HTTP (title changed), as the page sends it: the store
//   write, TaskUpserted on the feed, then the projector's new summary revision (two frames);
// - permission: the agent's permission request written as the agent layer writes it (pendingAction
//   PERMISSION in the summary), then answered as the respondToPermission path writes it (cleared);
//   rounds alternate the two, each one frame.
// For each: end to end (p50/p99 from just before the trigger to each client's arrival of the
// change's last frame), fan-out (frames delivered over the time from the round's first arrival to
// its last), the server's CPU per delivered frame, and how long the subscriptions took to open.
// Baseline in the same run: a bare `ws` server broadcasting the very frames the feed sent for each
// change (same number, same bytes, same order) to the same number of the same clients. The server,
// the baseline and the clients (a few worker processes) each run in processes of their own.
// Variants (BENCH_P5_VARIANTS): `sdk-resume`, resumed after boot.feedCursor as the SDK subscribes;
// `sdk-live`, the same operation without `after`.
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { print } from 'graphql'
import { ClientWorkspaceEventsDocument } from '../packages/client/src/generated/graphql.ts'
import { report, scaled, type Row } from './scenario.ts'
import { BENCH_ADMIN_TOKEN, bootFeedCursor, startBenchServer, type BenchServer } from './server-process.ts'
import { startClientFleet, type Arrivals, type ClientFleet, type Handshake } from './client-fleet.ts'
import { startRawWsServer, type BroadcastOrder } from './raw-ws-server.ts'
import type { FeedFixture } from './feed-handlers.ts'
import { httpGql, quantile, sleep } from './support.ts'
import { wallClock } from './clock.ts'
import type { ProfileSummary, SelfTime } from './cpu-profile.ts'

// Short (BENCH_SHORT=1): 300 subscribers (below GOAL_FROM: no goal), one round of each change, one profiled.
const SIZES = (process.env.BENCH_P5_SUBSCRIBERS ?? scaled('1000,10000,20000', '300')).split(',').map(Number)
/** Measured rounds per kind of change (permission rounds alternate raised and cleared). */
const ROUNDS = Number(process.env.BENCH_P5_ROUNDS ?? scaled(4, 1))
const WORKERS = Number(process.env.BENCH_P5_WORKERS ?? 3)
/** Loopback addresses the clients bind to (127.0.0.2 onwards): each holds at most a share of the ephemeral port range. */
const LOCAL_ADDRESSES = Number(process.env.BENCH_P5_LOCAL_ADDRESSES ?? 8)
/** Rounds per kind under the CPU profiler, after the measured ones, of the first variant at the largest size and of raw ws. */
const PROFILE_ROUNDS = Number(process.env.BENCH_P5_PROFILE_ROUNDS ?? scaled(2, 1))
const OPEN_PROFILE_FILE = process.env.BENCH_P5_PROFILE_OPEN
/** CPU while the subscriptions sit idle (keepalive and timers), measured before the rounds. */
const IDLE_MS = Number(process.env.BENCH_P5_IDLE_MS ?? scaled(2_000, 500))
const ROUND_TIMEOUT_MS = 30_000
/** Set-up waits (subscriptions registered, connections forgotten): bounded, generous for 20,000 on a loaded machine. */
const SETUP_TIMEOUT_MS = 240_000
/** The first is the one plotted and profiled. */
const VARIANTS = (process.env.BENCH_P5_VARIANTS ?? 'sdk-resume,sdk-live').split(',')
const KINDS = (process.env.BENCH_P5_TRIGGERS ?? 'task-edit,permission').split(',')
/** How raw ws writes a change of several frames: `client`, all of a client's in one write (the cheapest); `frame`, each frame to every client in turn. */
const RAW_ORDER = (process.env.BENCH_P5_RAW_ORDER ?? 'client') as BroadcastOrder
if (RAW_ORDER !== 'client' && RAW_ORDER !== 'frame') throw new Error(`BENCH_P5_RAW_ORDER is client or frame, not ${String(RAW_ORDER)}`)
/** The other order, measured too for changes of several frames and given in a note. */
const OTHER_ORDER: BroadcastOrder = RAW_ORDER === 'client' ? 'frame' : 'client'
/** Goals (issue 45, item 5), held at these sizes and above, each against raw ws in the same run. */
const GOAL_FROM = 10_000
const GOAL_CPU = 1.5
const GOAL_THROUGHPUT = 0.7
const GOAL_P99 = 1.5
const GOAL_OPEN = 2

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

interface Kind {
  id: string
  label: string
  /** The change, made in the server: resolves to the wall clock taken just before it was sent or written. */
  trigger(server: BenchServer, fixture: FeedFixture): Promise<number>
}

const UPDATE_TASK = 'mutation BenchUpdateTask($id: ID!, $input: UpdateTaskInput!) { updateTask(id: $id, input: $input) { id title updatedAt } }'
let edits = 0
const KIND_LIST: Kind[] = [
  {
    id: 'task-edit',
    label: 'task edit (updateTask mutation)',
    async trigger(server, fixture) {
      const started = wallClock()
      await httpGql(server.url, BENCH_ADMIN_TOKEN, UPDATE_TASK, { id: fixture.taskId, input: { title: `fan-out, edit ${++edits}` } })
      return started
    },
  },
  { id: 'permission', label: 'permission raised / cleared', trigger: (server) => server.call<number>('permission') },
]
for (const id of KINDS) if (!KIND_LIST.some((k) => k.id === id)) throw new Error(`unknown P5 trigger ${id}`)
const kinds = KIND_LIST.filter((k) => KINDS.includes(k.id))

// --- the machine's limits: ephemeral ports per client address, open files per process ---

const [portLow, portHigh] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number) as [number, number]
const ephemeralPorts = portHigh - portLow + 1
/** Open files a process may hold (its soft limit, which every child inherits). */
const openFilesLimit = Number(/^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]?.replace('unlimited', 'Infinity') ?? Infinity)
const LARGEST_ASKED = Math.max(...SIZES)
// Every client binds its own port on its address (bind before connect): half the range per address
// leaves room for the sockets of the previous size still in TIME_WAIT.
if (Math.ceil(LARGEST_ASKED / LOCAL_ADDRESSES) > ephemeralPorts / 2)
  throw new Error(
    `${LARGEST_ASKED} clients over ${LOCAL_ADDRESSES} loopback addresses is ${Math.ceil(LARGEST_ASKED / LOCAL_ADDRESSES)} ports each, over half of the ephemeral range ${portLow}-${portHigh}: raise BENCH_P5_LOCAL_ADDRESSES`,
  )

interface Run {
  p50: number
  p99: number
  /** Frames delivered over the measured rounds (each client gets every frame of each change). */
  deliveries: number
  /** Clients × rounds that got every frame of the change. */
  arrivals: number
  missing: number
  extra: number
  /** Frames per second from each round's first arrival (any frame, any client) to its last (the last frame at the last client). */
  throughput: number
  /** CPU time (user + system) of the process under measure per delivered frame, over the measured rounds, in µs. */
  cpuPerDelivery: number
  /** Each measured round's frames as a client got them. */
  sent: string[][]
  /** Write system calls of the process under measure per client and change, over the measured rounds. */
  writesPerArrival: number
  /** Median time from a client's first frame of a change to its last (0 for one-frame changes). */
  spreadP50: number
  /** Share of clients whose frames of a change arrived within 0.1 ms of each other (in one read, as a rule). */
  together: number
  samplesDiffer: boolean
}

/** What a process under measure does for the rounds: the change, and what it reports of itself. */
interface Subject {
  /** Before the round is armed (the server: projector idle, the change's count started). */
  prepare: () => Promise<unknown>
  /** Makes round `r`'s change: its start (wall clock) and how many frames each subscriber gets. */
  change: (kind: Kind, r: number) => Promise<{ started: number; frames: number }>
  cpu: () => Promise<number>
  /** Write system calls made so far. */
  writes: () => Promise<number>
  profileStart: () => Promise<unknown>
  profileStop: () => Promise<ProfileSummary>
}

/**
 * Rounds of one change each: arm the clients, make the change (which reports its start and its
 * frames), collect every client's arrival of its last frame. Warm-up rounds first, until one
 * reaches every client.
 */
async function rounds(fleet: ClientFleet, subject: Subject, kind: Kind, count = ROUNDS): Promise<Run> {
  let r = 0
  const round = async (): Promise<Arrivals & { started: number; frames: number }> => {
    await subject.prepare()
    await fleet.arm()
    const { started, frames } = await subject.change(kind, r++)
    if (frames < 1) throw new Error(`a ${kind.id} change published no frame`)
    const arrivals = await fleet.collect(ROUND_TIMEOUT_MS, frames)
    return { ...arrivals, started, frames }
  }
  for (let warm = 0; ; warm++) {
    if ((await round()).missing === 0) break
    if (warm === 4) throw new Error(`${kind.id}: warm-up rounds never reached every client`)
  }
  r = 0 // measured rounds are numbered from 0 (raw replays the server's frames by that number)
  const latencies: number[] = []
  const spreads: number[] = []
  const run = { deliveries: 0, arrivals: 0, missing: 0, extra: 0, sent: [] as string[][], samplesDiffer: false }
  let window = 0
  const cpuBefore = await subject.cpu()
  const writesBefore = await subject.writes()
  for (let i = 0; i < count; i++) {
    const a = await round()
    for (const t of a.times) latencies.push(t - a.started)
    for (const d of a.spreads) spreads.push(d)
    run.deliveries += a.times.length * a.frames
    run.arrivals += a.times.length
    run.missing += a.missing
    run.extra += a.extra
    run.samplesDiffer ||= a.samplesDiffer === true
    if (a.sample.length < a.frames) throw new Error(`${kind.id}: the sampled client got ${a.sample.length} frames of a ${a.frames}-frame change`)
    run.sent.push(a.sample.slice(0, a.frames))
    if (a.times.length > 0 && a.first !== undefined) window += a.times.reduce((m, t) => Math.max(m, t), 0) - a.first
  }
  const cpuUsed = (await subject.cpu()) - cpuBefore
  const writes = (await subject.writes()) - writesBefore
  return {
    ...run,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    spreadP50: quantile(spreads, 0.5),
    together: spreads.filter((d) => d < 0.1).length / Math.max(spreads.length, 1),
    throughput: (run.deliveries / window) * 1000,
    cpuPerDelivery: cpuUsed / run.deliveries,
    writesPerArrival: writes / run.arrivals,
  }
}

/** What one process under measure answers for a size: its runs by kind, its opening, its idle CPU and its profile if asked. */
interface Measured {
  runs: Map<string, Run>
  openMs: number
  /** CPU time of the process under measure per subscription opened, in µs (with tracing on, its spans exported too). */
  openCpu: number
  /** CPU time while the subscriptions sit idle, in ms per second. */
  idleCpu: number
  profile?: ProfileSummary
}

/** Polls `probe` every 100 ms (not faster: a poll of 20,000 subscriptions costs the server CPU of its own). */
async function until(probe: () => Promise<boolean>, what: string) {
  const deadline = performance.now() + SETUP_TIMEOUT_MS
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${SETUP_TIMEOUT_MS / 1000} s`)
    await sleep(100)
  }
}

async function timedOpen(fleet: ClientFleet, url: string, size: number, handshake: Handshake, subscribed: () => Promise<number>): Promise<number> {
  const started = performance.now()
  const { failed } = await fleet.open(url, size, handshake)
  if (failed > 0) throw new Error(`${failed} of ${size} connections to ${url} failed`)
  await until(async () => (await subscribed()) === size, `${size} subscriptions on ${url}`)
  return performance.now() - started
}

async function idleCpu(cpu: () => Promise<number>): Promise<number> {
  const [before, at] = [await cpu(), performance.now()]
  await sleep(IDLE_MS)
  return ((await cpu()) - before) / 1000 / ((performance.now() - at) / 1000)
}

/** Every kind's measured rounds, then (if asked) PROFILE_ROUNDS more of each under the CPU profiler, which is in no reported figure. */
async function measure(fleet: ClientFleet, subject: Subject, opened: Omit<Measured, 'runs' | 'profile'>, profile: boolean): Promise<Measured> {
  const runs = new Map<string, Run>()
  for (const kind of kinds) runs.set(kind.id, await rounds(fleet, subject, kind))
  if (!profile) return { runs, ...opened }
  await subject.profileStart()
  for (const kind of kinds) await rounds(fleet, subject, kind, PROFILE_ROUNDS)
  return { runs, ...opened, profile: await subject.profileStop() }
}

async function measureServer(server: BenchServer, fleet: ClientFleet, fixture: FeedFixture, size: number, variant: Variant, profile: boolean): Promise<Measured> {
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
  const cpu = () => server.call<number>('cpu')
  const measured = await measure(
    fleet,
    {
      prepare: () => server.call('changeBegins'),
      async change(kind) {
        const started = await kind.trigger(server, fixture)
        return { started, frames: await server.call<number>('changeFrames') }
      },
      cpu,
      writes: () => server.call<number>('writes'),
      profileStart: () => server.call('profileStart'),
      // BENCH_P5_PROFILE_FILE: the whole profile too (Chrome DevTools or speedscope open it).
      profileStop: () => server.call<ProfileSummary>('profileStop', { file: process.env.BENCH_P5_PROFILE_FILE }),
    },
    { openMs, openCpu, idleCpu: await idleCpu(cpu) },
    profile,
  )
  await fleet.closeAll()
  await until(async () => (await server.call<{ connections: number }>('tables')).connections === 0, 'server connections closed')
  return measured
}

/** The raw ws baseline for a size: round r of each kind broadcasts the frames the server sent in its measured round r. */
async function measureRaw(fleet: ClientFleet, size: number, sent: Map<string, string[][]>, profile: boolean): Promise<Measured> {
  const raw = await startRawWsServer()
  try {
    const cpuBefore = await raw.cpu()
    const openMs = await timedOpen(fleet, raw.url, size, { kind: 'subscribe', token: BENCH_ADMIN_TOKEN, payload: { query: 'subscription { raw }' } }, () => raw.subscribed())
    const openCpu = ((await raw.cpu()) - cpuBefore) / size
    const cpu = () => raw.cpu()
    const subject = (order: BroadcastOrder): Subject => ({
      prepare: async () => undefined,
      async change(kind, r) {
        const rounds = sent.get(kind.id)!
        const frames = rounds[r % rounds.length]!
        return { started: await raw.broadcast(frames, order), frames: frames.length }
      },
      cpu,
      writes: () => raw.writes(),
      profileStart: () => raw.profileStart(),
      profileStop: () => raw.profileStop(),
    })
    const measured = await measure(fleet, subject(RAW_ORDER), { openMs, openCpu, idleCpu: await idleCpu(cpu) }, profile)
    // Changes of several frames once more on the same connections, written the other way (no reported row is of these).
    for (const kind of kinds)
      if (sent.get(kind.id)!.some((frames) => frames.length > 1)) measured.runs.set(`${kind.id}/${OTHER_ORDER}`, await rounds(fleet, subject(OTHER_ORDER), kind))
    await fleet.closeAll()
    return measured
  } finally {
    await raw.stop()
  }
}

/** A frame's feed event type and size, e.g. "TaskUpserted 1234 B". */
function frameName(frame: string): string {
  let type = '?'
  try {
    type = (JSON.parse(frame) as { payload?: { data?: { workspaceEvents?: { __typename?: string } } } }).payload?.data?.workspaceEvents?.__typename ?? '?'
  } catch {
    // not JSON: named by size alone
  }
  return `${type} ${Buffer.byteLength(frame)} B`
}

const fleet = startClientFleet(WORKERS, LOCAL_ADDRESSES)
const server = await startBenchServer({ handlers: new URL('./feed-handlers.ts', import.meta.url) })
const rows: Row[] = []
const series: Record<string, Array<{ x: number; y: number }>> = { 'server p50': [], 'server p99': [], 'raw ws p50': [], 'raw ws p99': [] }
/** Frames of each kind's changes as the first variant's first measured round sent them. */
const framesOf = new Map<string, string[]>()
const profiles: { server?: ProfileSummary; raw?: ProfileSummary } = {}
/** How far apart a client's frames of a multi-frame change arrived, first variant, by kind and size. */
const spreadNotes: string[] = []
/** Write system calls per client and change, first variant, by size and kind. */
const writeNotes: string[] = []
/** The server against raw ws writing the other way, changes of several frames, by variant, size and kind. */
const otherOrderNotes: string[] = []
const oddities: string[] = []
let sizes = SIZES
let capNote: string | undefined
const started = performance.now()
try {
  const fixture = await server.call<FeedFixture>('seed')
  // One socket per subscriber in one process, besides what the server holds already: a size past
  // the open-files limit cannot run on this machine, so it runs as large as the limit allows.
  const held = await server.call<number>('openFiles')
  const cap = Math.floor(openFilesLimit - held - 64)
  if (LARGEST_ASKED > cap) {
    sizes = SIZES.map((s) => Math.min(s, cap))
    capNote = `${LARGEST_ASKED.toLocaleString('en-US')} subscribers asked, ${cap.toLocaleString('en-US')} run: the open-files limit of a process here is ${openFilesLimit} (the server holds ${held} files before any subscriber, and keeps 64 spare for the database and the triggers' HTTP requests).`
    console.info(`  ${capNote}`)
  }
  const largest = Math.max(...sizes)
  for (const size of sizes) {
    /** Raw runs of this size by the lengths of the frames they replayed (the variants' frames differ only in the cursor's digits). */
    const raws = new Map<string, Measured>()
    for (const variant of VARIANT_LIST.filter((v) => VARIANTS.includes(v.id))) {
      const profile = size === largest && variant.id === VARIANTS[0]
      const ours = await measureServer(server, fleet, fixture, size, variant, profile)
      const sent = new Map([...ours.runs].map(([kind, run]) => [kind, run.sent]))
      const key = JSON.stringify([...sent].map(([kind, rs]) => [kind, rs.map((frames) => frames.map((f) => Buffer.byteLength(f)))]))
      let raw = raws.get(key)
      if (!raw || (profile && !raw.profile)) raws.set(key, (raw = await measureRaw(fleet, size, sent, profile)))
      if (profile) Object.assign(profiles, { server: ours.profile, raw: raw.profile })
      const what = `${variant.label}, ${size.toLocaleString('en-US')} subscribers`
      const goals = size >= GOAL_FROM
      for (const kind of kinds) {
        const [o, r] = [ours.runs.get(kind.id)!, raw.runs.get(kind.id)!]
        if (variant.id === VARIANTS[0] && !framesOf.has(kind.id)) framesOf.set(kind.id, o.sent[0]!)
        for (const [who, run] of [['server', o], ['raw ws', r]] as const) {
          if (run.missing > 0) oddities.push(`${what}, ${kind.label}, ${who}: ${run.missing} client arrivals missing (no change's last frame within ${ROUND_TIMEOUT_MS / 1000} s).`)
          if (run.extra > 0) oddities.push(`${what}, ${kind.label}, ${who}: ${run.extra} clients got more frames than the change made.`)
          if (run.samplesDiffer) oddities.push(`${what}, ${kind.label}, ${who}: the workers' sampled clients got different bytes for one change.`)
        }
        console.info(
          `  ${size} ${variant.id} ${kind.id}: server p50 ${o.p50.toFixed(1)} p99 ${o.p99.toFixed(1)} ms, ${o.throughput.toFixed(0)} frames/s, ${o.cpuPerDelivery.toFixed(1)} µs CPU/frame; ` +
            `raw p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} ms, ${r.throughput.toFixed(0)} frames/s, ${r.cpuPerDelivery.toFixed(1)} µs CPU/frame (${o.deliveries} / ${r.deliveries} frames delivered); ` +
            `write syscalls per client and change ${o.writesPerArrival.toFixed(2)} / ${r.writesPerArrival.toFixed(2)}` +
            (o.sent[0]!.length > 1 ? `; a client's frames of a change ${o.spreadP50.toFixed(2)} / ${r.spreadP50.toFixed(2)} ms apart at p50, ${(100 * o.together).toFixed(0)} / ${(100 * r.together).toFixed(0)} % within 0.1 ms` : ''),
        )
        const other = raw.runs.get(`${kind.id}/${OTHER_ORDER}`)
        if (other)
          otherOrderNotes.push(
            `${kind.id}, ${variant.id}, ${size.toLocaleString('en-US')}: CPU per frame ${(o.cpuPerDelivery / other.cpuPerDelivery).toFixed(2)}× (raw ${other.cpuPerDelivery.toFixed(1)} µs, ${other.writesPerArrival.toFixed(2)} writes per client), ` +
              `fan-out throughput ${(o.throughput / other.throughput).toFixed(2)}×, p99 ${(o.p99 / other.p99).toFixed(2)}× (raw ${other.p99.toFixed(0)} ms)`,
          )
        if (variant.id === VARIANTS[0]) writeNotes.push(`${kind.id} at ${size.toLocaleString('en-US')}: ${o.writesPerArrival.toFixed(2)} (raw ws ${r.writesPerArrival.toFixed(2)})`)
        if (variant.id === VARIANTS[0] && o.sent[0]!.length > 1)
          spreadNotes.push(
            `${size.toLocaleString('en-US')}: ${o.spreadP50.toFixed(1)} ms apart at p50, ${(100 * o.together).toFixed(0)} % of clients within 0.1 ms (raw ws ${r.spreadP50.toFixed(1)} ms, ${(100 * r.together).toFixed(0)} %)`,
          )
        if (variant.id === VARIANTS[0] && kind.id === kinds[0]!.id) {
          series['server p50']!.push({ x: size, y: o.p50 })
          series['server p99']!.push({ x: size, y: o.p99 })
          series['raw ws p50']!.push({ x: size, y: r.p50 })
          series['raw ws p99']!.push({ x: size, y: r.p99 })
        }
        const complete = o.missing === 0
        const of = `${kind.label}, ${what}`
        const baseline = (value: number) => ({ label: 'raw ws broadcast, same frames', value })
        rows.push(
          { metric: `end-to-end p50, trigger to last frame, ${of}`, value: o.p50, unit: 'ms', baseline: baseline(r.p50) },
          {
            metric: `end-to-end p99, trigger to last frame, ${of}`,
            value: o.p99,
            unit: 'ms',
            baseline: baseline(r.p99),
            ...(goals && { goal: `≤ ${GOAL_P99}× raw`, met: o.p99 <= GOAL_P99 * r.p99 && complete }),
          },
          {
            metric: `fan-out throughput, first to last arrival, ${of}`,
            value: o.throughput,
            unit: 'frames/s',
            baseline: baseline(r.throughput),
            ...(goals && { goal: `≥ ${GOAL_THROUGHPUT}× raw`, met: o.throughput >= GOAL_THROUGHPUT * r.throughput && complete }),
          },
          {
            metric: `server CPU per delivered frame, ${of}`,
            value: o.cpuPerDelivery,
            unit: 'µs',
            baseline: baseline(r.cpuPerDelivery),
            ...(goals && { goal: `≤ ${GOAL_CPU}× raw`, met: o.cpuPerDelivery <= GOAL_CPU * r.cpuPerDelivery && complete }),
          },
        )
      }
      console.info(`  ${size} ${variant.id}: opened in ${(ours.openMs / 1000).toFixed(1)} s (raw ${(raw.openMs / 1000).toFixed(1)} s); idle CPU ${ours.idleCpu.toFixed(1)} ms/s (raw ${raw.idleCpu.toFixed(1)} ms/s)`)
      rows.push(
        {
          metric: `time to open the subscriptions, ${what}`,
          value: ours.openMs,
          unit: 'ms',
          baseline: { label: 'raw ws, same clients', value: raw.openMs },
          ...(goals && { goal: `≤ ${GOAL_OPEN}× raw`, met: ours.openMs <= GOAL_OPEN * raw.openMs }),
        },
        { metric: `server CPU per subscription opened, ${what}`, value: ours.openCpu, unit: 'µs', baseline: { label: 'raw ws, same clients', value: raw.openCpu } },
        { metric: `server CPU while the subscriptions sit idle, ${what}`, value: ours.idleCpu, unit: 'ms/s', baseline: { label: 'raw ws, same clients', value: raw.idleCpu } },
      )
    }
  }
} finally {
  fleet.stop()
  await server.stop()
}
const seconds = (performance.now() - started) / 1000
console.info(`  P5 took ${seconds.toFixed(0)} s`)

const largest = Math.max(...sizes)
const percent = (list: SelfTime[]) => list.map((f) => `${f.name} ${(100 * f.share).toFixed(1)} %`).join('; ')
const profileNotes = (who: string, summary: ProfileSummary | undefined) =>
  summary
    ? [
        `CPU profile, ${who} (${PROFILE_ROUNDS} extra rounds of each change at ${largest.toLocaleString('en-US')} subscribers), self time by bucket: ${percent(summary.buckets)}.`,
        `CPU profile, ${who}, top self time: ${percent(summary.top)}.`,
      ]
    : []

report({
  id: 'P5',
  title: 'fan-out of one task change (task edit, permission raised / cleared)',
  rows,
  series,
  notes: [
    `Changes, each a real write whose cost is that of the change in production, never a Git observation (the Git monitor has its own figure: \`npm run bench:git\`): ${kinds
      .map((k) => `${k.label}: ${(framesOf.get(k.id) ?? []).map(frameName).join(' + ')}`)
      .join('; ')}. The task edit is the updateTask mutation over HTTP (store write, TaskUpserted, projection, summary revision); a permission round is either the agent's request written as the agent layer writes it (a PENDING request of the turn in flight, pendingAction PERMISSION) or its answer written as respondToPermission writes it (pendingAction cleared), alternately. ${ROUNDS} measured rounds per change kind and size, after warm-up.`,
    `End to end: from just before the trigger (the mutation request sent; the request row written) to each client's arrival of the change's last frame, wall clock shared between processes. Fan-out throughput: frames delivered over the time from the round's first arrival (any frame, any client) to its last, summed over the rounds. CPU: the process's user + system time over the measured rounds (the server's includes the mutation, the store writes, the projection and its keepalives) per delivered frame. Raw ws replays the same frames (same number, bytes and order) in its round of the same number, ${
      RAW_ORDER === 'client'
        ? "all of a change's frames to a client in one write (its socket corked around them; BENCH_P5_RAW_ORDER=frame writes each frame to every client in turn): the least those bytes can cost a bare ws server"
        : 'each frame to every client in turn (BENCH_P5_RAW_ORDER=frame), one write per frame and client'
    }. Opening: from the first connection to the last subscription registered.`,
    `Operation: every subscriber sends the SDK's own workspaceEvents subscription (ClientWorkspaceEvents in packages/client/src/operations/subscriptions.graphql), with \`after\` set to boot.feedCursor as the SDK does after its boot, or without it. Goals from ${GOAL_FROM.toLocaleString('en-US')} subscribers, against raw ws in the same run: CPU per frame ≤ ${GOAL_CPU}×, fan-out throughput ≥ ${GOAL_THROUGHPUT}×, end-to-end p99 ≤ ${GOAL_P99}×, opening ≤ ${GOAL_OPEN}×; a round with a missing arrival misses.`,
    `Clients: ${WORKERS} worker processes of hand-written graphql-transport-ws clients, the same in both runs, bound round-robin to ${LOCAL_ADDRESSES} loopback addresses (127.0.0.2-127.0.0.${LOCAL_ADDRESSES + 1}) so no address needs more than ${Math.ceil(largest / LOCAL_ADDRESSES).toLocaleString('en-US')} of the ${ephemeralPorts.toLocaleString('en-US')} ephemeral ports (ip_local_port_range ${portLow}-${portHigh}); the baseline is a bare ws server writing the same frame bytes, with no store, projector, GraphQL, scheduler or keepalive.`,
    ...(capNote ? [capNote] : []),
    ...(spreadNotes.length > 0 ? [`A task edit's two frames at one client (${VARIANT_LIST.find((v) => v.id === VARIANTS[0])!.label}): ${spreadNotes.join('; ')}.`] : []),
    ...(writeNotes.length > 0 ? [`Write system calls (write, writev; /proc/self/io) per client and change over the measured rounds, ${VARIANT_LIST.find((v) => v.id === VARIANTS[0])!.label}: ${writeNotes.join('; ')}.`] : []),
    ...(otherOrderNotes.length > 0
      ? [
          `The server against raw ws writing ${OTHER_ORDER === 'frame' ? 'each frame of a change in a write of its own (one write per frame and client, as the server writes them)' : "all of a change's frames to a client in one write"} instead, on the same connections right after: ${otherOrderNotes.join('; ')}.`,
        ]
      : []),
    ...profileNotes('server', profiles.server),
    ...profileNotes('raw ws', profiles.raw),
    `Limits: every process shares the machine's ${os.cpus().length} cores, so the clients' reading is part of both figures; the run took ${seconds.toFixed(0)} s.`,
    ...oddities,
  ],
})
