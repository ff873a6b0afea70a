// P10 (`npm run bench:p10`): the embedded server does not starve itself. ONE server process on
// SQLite (the embedded default: a SQLite file, no Redis), as README's run command starts it, with
// BENCH_STREAMS sessions each streaming one long agent message: bench/stream-agent.ts (a real
// agent process) sends BENCH_P10_RATE notifications a second of BENCH_P10_GROUP items each, per
// session, far more than a model's token rate; BENCH_P10_MOCK=1 streams the built-in mock's
// `stream` step instead (one-item chunks as fast as the server reads them: the server's main
// thread then has all the ingest work it can take, and the messages grow by megabytes).
// One more session streams a message that grows to about 3 MB over the phase (appends to it cost
// what they cost to a short one: src/store/message-content.ts).
// Measured from this process while the streams run, against the same server idle earlier in the
// same run: GET /healthz, a small query (the SDK's ClientTasksPage with first: 1), and the SDK's
// ClientAddMessage on another, idle session (a one-line mock reply), all over HTTP, one after the
// other with a short pause. The server's own event-loop delay (perf_hooks, in the server
// process) is read per phase. Goal: /healthz and the small query p99 ≤ 100 ms and ≤ 3× idle;
// addMessage p99 ≤ 250 ms and ≤ 3× idle.
// BENCH_P10_PROFILE=<dir>: a CPU profile of the server (--cpu-prof) over the whole run.
// BENCH_P10_STATEMENTS=1: counts the SQL statements the server sends per second (Prisma's query
// log costs time of its own, so the figures of such a run are not the row's).
import { randomUUID } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { report, ratio, scaled, type Row } from './scenario.ts'
import { ClientAddMessageDocument, ClientTasksPageDocument, operationName, sdkHttp } from './sdk-operations.ts'
import { BENCH_ADMIN_TOKEN, startBenchServer, type BenchServer } from './server-process.ts'
import type { handlers } from './p10-embedded-server.ts'
import type { StreamPrompt } from './stream-agent.ts'
import { httpGql, quantile, sleep } from './support.ts'

// Short (BENCH_SHORT=1): 3 streams, 10 rounds a phase, phases of at most 20 s.
const STREAMS = Number(process.env.BENCH_STREAMS ?? scaled(10, 3))
const SAMPLES = Number(process.env.BENCH_P10_SAMPLES ?? scaled(150, 10))
const MOCK = process.env.BENCH_P10_MOCK === '1'
const RATE = Number(process.env.BENCH_P10_RATE ?? 100)
const GROUP = Number(process.env.BENCH_P10_GROUP ?? 10)
/** The streams' length: longer than any run, so every stream lasts the whole load phase. */
const STREAM_SECONDS = 900
const MOCK_CHUNKS = 10_000_000
const PAUSE_MS = 20
/** A phase ends at SAMPLES rounds or after this long, whichever is first (a starved server answers slowly). */
const PHASE_LIMIT_MS = Number(process.env.BENCH_P10_PHASE_LIMIT_MS ?? scaled(90_000, 20_000))
const RAMP_MS = scaled(3_000, 1_000)
const WARMUP = scaled(20, 5)
const HEALTH_GOAL_MS = 100
const HEALTH_GOAL_RATIO = 3
const ADD_GOAL_MS = 250

const script = (...steps: object[]) => JSON.stringify({ script: steps })
const profileDir = process.env.BENCH_P10_PROFILE
const countStatements = process.env.BENCH_P10_STATEMENTS === '1'

type Call = <K extends keyof typeof handlers>(name: K, args?: Parameters<(typeof handlers)[K]>[1]) => Promise<Awaited<ReturnType<(typeof handlers)[K]>>>

const here = path.dirname(fileURLToPath(import.meta.url))
const STREAM_PROFILE = MOCK ? 'mock' : 'bench-stream'
const streamPrompt = MOCK
  ? script({ stream: { kind: 'message', count: MOCK_CHUNKS } })
  : JSON.stringify({ count: RATE * GROUP * STREAM_SECONDS, group: GROUP, seconds: STREAM_SECONDS } satisfies StreamPrompt)
/**
 * One more session streams a message that passes 3 MB early in the phase and goes on growing
 * (450,000 "i;" items are 3.2 MB; these come 40,000 a second), so an append's cost with the
 * message's length shows here: before appends were chunk rows, each one rewrote the whole row on
 * the event loop.
 */
const LARGE_ITEMS = scaled(2_400_000, 45_000)
const largePrompt = JSON.stringify({ count: LARGE_ITEMS, group: 400, seconds: scaled(60, 10) } satisfies StreamPrompt)
const load = MOCK ? `the mock's ${MOCK_CHUNKS}-chunk stream step (one-item chunks as fast as the server reads them)` : `bench/stream-agent.ts: ${RATE} notifications/s of ${GROUP} items each per session`

const start = (profile: boolean) =>
  startBenchServer({
    handlers: new URL('./p10-embedded-server.ts', import.meta.url),
    execArgv: profile && profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    start: countStatements ? { countStatements: true } : {},
    env: { AGENT_PROFILES: JSON.stringify({ 'bench-stream': { command: [process.execPath, '--import', import.meta.resolve('tsx'), path.join(here, 'stream-agent.ts')] } }) },
  })

/** A server with its probes: the task, session and workspace they use, and the sessions that stream. */
async function target(server: BenchServer) {
  const call = server.call as Call
  const { workspaceId, sessions } = await call('seed', { profiles: ['mock', ...Array.from({ length: STREAMS }, () => STREAM_PROFILE), 'bench-stream'] })
  const probe = sessions[0]!
  return {
    server,
    call,
    streaming: sessions.slice(1),
    health: async () => {
      const response = await fetch(`${server.url}/healthz`)
      if (!response.ok) throw new Error(`/healthz ${response.status}`)
      await response.arrayBuffer()
    },
    small: () => sdkHttp(server.url, BENCH_ADMIN_TOKEN, ClientTasksPageDocument, { workspaceId, first: 1 }),
    add: () => sdkHttp(server.url, BENCH_ADMIN_TOKEN, ClientAddMessageDocument, { input: { ...probe, clientMessageId: randomUUID(), content: script({ say: 'ok' }) } }),
  }
}
type Target = Awaited<ReturnType<typeof target>>

const timed = async (into: number[], run: () => Promise<unknown>) => {
  const started = performance.now()
  await run()
  into.push(performance.now() - started)
}

/** What one server gave over a phase: probe latencies (ms), its event-loop delay, its CPU and ingest. */
async function begin(t: Target) {
  await t.call('loopDelay')
  if (countStatements) await t.server.call<number>('statements')
  const cpu = await t.server.call<number>('cpu')
  const progress = await t.call('progress', { sessionIds: t.streaming.map((s) => s.sessionId) })
  const started = performance.now()
  const out = { health: [] as number[], small: [] as number[], add: [] as number[] }
  return {
    out,
    round: async () => {
      await timed(out.health, t.health)
      await timed(out.small, t.small)
      await timed(out.add, t.add)
    },
    end: async () => {
      const seconds = (performance.now() - started) / 1000
      const after = await t.call('progress', { sessionIds: t.streaming.map((s) => s.sessionId) })
      const cpuShare = ((await t.server.call<number>('cpu')) - cpu) / 1e6 / seconds
      const statements = countStatements ? (await t.server.call<number>('statements')) / seconds : undefined
      const loop = (await t.call('loopDelay'))!
      return { ...out, seconds, loop, cpuShare, chunksPerSecond: (after.received - progress.received) / seconds, live: after.live, statements }
    },
  }
}

type Phase = Awaited<ReturnType<Awaited<ReturnType<typeof begin>>['end']>>

/**
 * Rounds of the three probes, one after the other, alternating between the servers so both see
 * the same machine (others' load on a shared machine moves from minute to minute).
 */
async function phase(targets: Target[], samples: number) {
  const runs = await Promise.all(targets.map(begin))
  const started = performance.now()
  while (runs[0]!.out.health.length < samples && performance.now() - started < PHASE_LIMIT_MS) {
    for (const run of runs) await run.round()
    await sleep(PAUSE_MS)
  }
  return Promise.all(runs.map((r) => r.end()))
}

// The measured server, and an idle twin (same configuration, same seed, no stream) probed in the same rounds.
const servers = await Promise.all([start(true), start(false)])
try {
  const [measured, twin] = await Promise.all(servers.map(target))
  // Warm-up (JIT, Prisma's compiled queries).
  for (let i = 0; i < WARMUP; i++) for (const t of [measured!, twin!]) await Promise.all([t.health(), t.small()]).then(t.add)
  const [before] = await phase([measured!], SAMPLES)

  for (const [i, s] of measured!.streaming.entries()) {
    const content = i === STREAMS ? largePrompt : streamPrompt
    await sdkHttp(measured!.server.url, BENCH_ADMIN_TOKEN, ClientAddMessageDocument, { input: { ...s, clientMessageId: randomUUID(), content } })
  }
  await sleep(RAMP_MS)
  const [busy, idle] = (await phase([measured!, twin!], SAMPLES)) as [Phase, Phase]
  const large = measured!.streaming[STREAMS]!
  const { data: grown } = await httpGql<{ session: { messages: { content: string }[] } }>(
    measured!.server.url,
    BENCH_ADMIN_TOKEN,
    'query($id: ID!) { session(id: $id) { messages(last: 1) { content } } }',
    { id: large.sessionId },
  )
  const largeLength = Buffer.byteLength(grown.session.messages[0]?.content ?? '')
  const alone = before!

  const p = quantile
  const healthRatio = ratio(p(busy.health, 0.99), p(idle.health, 0.99))
  const smallRatio = ratio(p(busy.small, 0.99), p(idle.small, 0.99))
  const idleLabel = 'an idle twin server, same rounds'
  const under = `${STREAMS} sessions streaming and one message growing to ${(largeLength / 2 ** 20).toFixed(1)} MB`
  const SMALL = `${operationName(ClientTasksPageDocument)}(first: 1)`
  const ADD = operationName(ClientAddMessageDocument)
  const rows: Row[] = [
    { metric: `GET /healthz, ${under}, p50 (latency ratio)`, value: p(busy.health, 0.5), unit: 'ms', baseline: { label: idleLabel, value: p(idle.health, 0.5) } },
    {
      metric: `GET /healthz, ${under}, p99 (latency ratio)`,
      value: p(busy.health, 0.99),
      unit: 'ms',
      baseline: { label: idleLabel, value: p(idle.health, 0.99) },
      goal: `≤ ${HEALTH_GOAL_MS} ms and ≤ ${HEALTH_GOAL_RATIO}× idle`,
      met: p(busy.health, 0.99) <= HEALTH_GOAL_MS && healthRatio <= HEALTH_GOAL_RATIO,
    },
    { metric: `${SMALL} over HTTP, ${under}, p50 (latency ratio)`, value: p(busy.small, 0.5), unit: 'ms', baseline: { label: idleLabel, value: p(idle.small, 0.5) } },
    {
      metric: `${SMALL} over HTTP, ${under}, p99 (latency ratio)`,
      value: p(busy.small, 0.99),
      unit: 'ms',
      baseline: { label: idleLabel, value: p(idle.small, 0.99) },
      goal: `≤ ${HEALTH_GOAL_MS} ms and ≤ ${HEALTH_GOAL_RATIO}× idle`,
      met: p(busy.small, 0.99) <= HEALTH_GOAL_MS && smallRatio <= HEALTH_GOAL_RATIO,
    },
    { metric: `${ADD} on an idle session over HTTP, ${under}, p50 (latency ratio)`, value: p(busy.add, 0.5), unit: 'ms', baseline: { label: idleLabel, value: p(idle.add, 0.5) } },
    {
      metric: `${ADD} on an idle session over HTTP, ${under}, p99 (latency ratio)`,
      value: p(busy.add, 0.99),
      unit: 'ms',
      baseline: { label: idleLabel, value: p(idle.add, 0.99) },
      goal: `≤ ${ADD_GOAL_MS} ms and ≤ ${HEALTH_GOAL_RATIO}× idle`,
      met: p(busy.add, 0.99) <= ADD_GOAL_MS && ratio(p(busy.add, 0.99), p(idle.add, 0.99)) <= HEALTH_GOAL_RATIO,
    },
    { metric: `server event-loop delay, ${under}, p99 (latency ratio)`, value: busy.loop.p99, unit: 'ms', baseline: { label: idleLabel, value: idle.loop.p99 } },
    { metric: `server event-loop delay, ${under}, max`, value: busy.loop.max, unit: 'ms', baseline: { label: idleLabel, value: idle.loop.max } },
    { metric: `server CPU (user + system) per second of wall time, ${under}`, value: busy.cpuShare, unit: 's/s', baseline: { label: idleLabel, value: idle.cpuShare } },
    { metric: `agent notifications ingested by the ${STREAMS} streams while measured`, value: busy.chunksPerSecond, unit: 'chunks/s' },
  ]
  if (busy.live < STREAMS) throw new Error(`only ${busy.live} sessions still ran at the end of the load phase (of ${STREAMS} + the probe's)`)
  report({
    id: 'P10',
    title: 'the embedded server (SQLite) under its own streams',
    rows,
    notes: [
      `Two server processes on SQLite files of their own (no Redis), each seeded alike: the measured one, where ${STREAMS} sessions each stream one message (${load}) and one more streams a message of up to ${LARGE_ITEMS.toLocaleString('en')} items at 40,000 a second (${(largeLength / 2 ** 20).toFixed(1)} MB when the phase ended), and an idle twin; an ${STREAMS + 1}th session of each takes the probes' ${ADD} (a one-line mock reply each). Each round sends GET /healthz, the SDK's ${SMALL} and its ${ADD} over HTTP, one after the other, to the measured server and then to the twin, ${PAUSE_MS} ms apart: ${busy.health.length} rounds in ${busy.seconds.toFixed(0)} s (at most ${SAMPLES}, or ${PHASE_LIMIT_MS / 1000} s), ${RAMP_MS / 1000} s after the streams started. The twin is the baseline rather than the same server's idle minutes before, because on a shared machine others' load moves from minute to minute; the same server alone before its streams started answered /healthz p99 ${p(alone.health, 0.99).toFixed(0)} ms, ${SMALL} p99 ${p(alone.small, 0.99).toFixed(0)} ms, ${ADD} p99 ${p(alone.add, 0.99).toFixed(0)} ms.`,
      `Server event-loop delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution, in each server process): idle twin p50 ${idle.loop.p50.toFixed(1)} / p99 ${idle.loop.p99.toFixed(1)} / max ${idle.loop.max.toFixed(1)} ms; measured server p50 ${busy.loop.p50.toFixed(1)} / p99 ${busy.loop.p99.toFixed(1)} / max ${busy.loop.max.toFixed(1)} ms (before its streams: p99 ${alone.loop.p99.toFixed(1)} ms). All ${busy.live} of its sessions still ran at the end (no lease lapse interrupted them).`,
      `Maxima: /healthz ${Math.max(...busy.health).toFixed(0)} ms, ${SMALL} ${Math.max(...busy.small).toFixed(0)} ms, ${ADD} ${Math.max(...busy.add).toFixed(0)} ms under load (twin ${Math.max(...idle.health).toFixed(0)}, ${Math.max(...idle.small).toFixed(0)}, ${Math.max(...idle.add).toFixed(0)} ms). Load average ${os.loadavg().map((l) => l.toFixed(1)).join(' / ')} (1 / 5 / 15 min) at the end, on ${os.cpus().length} cores.`,
      `What held the loop (CPU profiles of the server, BENCH_P10_PROFILE; statement counts, BENCH_P10_STATEMENTS): better-sqlite3 runs each statement on the main thread and Prisma's adapter answers with promises already resolved, so a write and everything it sets off run as one macrotask. Each 100 ms window of every stream was an append plus a source event, and the event a projection of the task: the workspace read, a dozen summary reads, the derivation, for a summary the append cannot change (no summary input is a message's content, version or updatedAt). Appends now emit no source event: one statement a window instead of 13 (test/projector/stream-appends.test.ts); and a projection starts in a macrotask after the write that asked for it (src/projector/coalescing-runner.ts), so the request that wrote answers first, with other requests' I/O between projections. Each commit also waited for an fsync of the WAL (SQLite's default synchronous = FULL); it is NORMAL now, which in WAL mode syncs at checkpoints only.`,
      `What is left: an append is a chunk row of its own text plus the message's version (src/store/message-content.ts), whatever the message's length; before, it rewrote the whole row (SQLite updates a record whole): about 1 ms per 100 KB, 7–10 ms at 1 MB, 25–60 ms at 3 MB, all on the main thread (bench P13 has both, side by side). Prisma prepares every statement anew (better-sqlite3's prepare, about 7% of the server's busy time) and compiles each query in WebAssembly on the main thread.`,
      ...(busy.statements !== undefined ? [`SQL statements per second: idle twin ${idle.statements!.toFixed(0)}, measured server ${busy.statements.toFixed(0)} (BENCH_P10_STATEMENTS=1).`] : []),
    ],
  })
} finally {
  await Promise.all(servers.map((s) => s.stop()))
}
