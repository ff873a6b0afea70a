// P3 (`npm run bench:p3`): how fast one agent's stream gets into the store. The server runs in a
// process of its own; this process is the client. It sends the SDK's ClientAddMessage with a
// mock-agent script streaming BENCH_CHUNKS one-item chunks and times dispatch → the turn's
// TurnCompleted (published only after the coalescer has flushed everything into the store, and
// observed inside the server process: no client follows the session, so nothing is delivered);
// then it checks the stored message character for character. Baselines, in the same run, after
// each turn so both see the same load on the machine:
// - raw (the goal's, README): the exact bytes the mock agent writes for the same script (captured
//   from the agent run alone, no server), split into lines and JSON.parse'd in one process from
//   memory: the least any ACP client must do with them, with no agent and no pipe;
// - the same pipeline without the server: the mock agent spawned alone, its stdout read by a bare
//   NDJSON reader (split + JSON.parse) in this process, prompt → the prompt's response: two
//   processes and a pipe like the measured turn, so it shows what the server itself costs.
// Goal: ≥ 100k chunks/s and ≥ 0.5× raw. All three figures are chunks (session/update lines) per second.
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { MOCK_PROFILE } from '../src/agents/profiles.ts'
import { report, ratio, scaled, type Row } from './scenario.ts'
import { ClientAddMessageDocument, operationName, sdkHttp } from './sdk-operations.ts'
import { BENCH_ADMIN_TOKEN, startBenchServer, type BenchServer } from './server-process.ts'
import type { handlers } from './p3-ingest-server.ts'
import { median } from './support.ts'

// Short (BENCH_SHORT=1): one turn of 20,000 chunks after a 2,000-chunk warm-up.
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? scaled(200_000, 20_000))
/** A first, smaller turn warms the JIT of both processes; it is not measured. */
const WARMUP_CHUNKS = Number(process.env.BENCH_WARMUP_CHUNKS ?? Math.min(CHUNKS, scaled(20_000, 2_000)))
/** Every wait is bounded: a stuck turn fails the scenario instead of hanging it. */
const TURN_LIMIT_MS = Number(process.env.BENCH_TURN_LIMIT_MS ?? 120_000)
/** Measured turns; each is followed by its raw baseline, so both see the same load on the machine. */
const RUNS = Number(process.env.BENCH_RUNS ?? scaled(3, 1))
const RAW_REPEATS = 3
const GOAL_RATE = 100_000
const GOAL_RATIO = 0.5

const script = (count: number) => JSON.stringify({ script: [{ stream: { kind: 'message', count } }] })
const expectedContent = (count: number) => {
  const parts: string[] = []
  for (let i = 0; i < count; i++) parts.push(`${i};`)
  return parts.join('')
}

type Call = <K extends keyof typeof handlers>(name: K, args?: Parameters<(typeof handlers)[K]>[1]) => Promise<Awaited<ReturnType<(typeof handlers)[K]>>>

function bounded<T>(what: string, promise: Promise<T>, ms = TURN_LIMIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no end within ${ms} ms`)), ms)))
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

/** One turn through the server: chunks/s from dispatch to the turn's end, and the stored transcript checked. */
async function ingest(server: BenchServer, ids: { taskId: string; sessionId: string }, count: number) {
  const call = server.call as Call
  await call('arm', { sessionId: ids.sessionId })
  const started = performance.now()
  await sdkHttp(server.url, BENCH_ADMIN_TOKEN, ClientAddMessageDocument, { input: { ...ids, clientMessageId: randomUUID(), content: script(count) } })
  const turnId = await bounded('turn', call('turnEnded', { sessionId: ids.sessionId }))
  const seconds = (performance.now() - started) / 1000
  const stored = await call('stored', { turnId })
  const expected = expectedContent(count)
  if (stored.length !== 1 || stored[0]!.kind !== 'MESSAGE') throw new Error(`expected one agent message, stored ${stored.map((m) => m.kind).join(', ')}`)
  const exact = stored[0]!.content === expected
  if (!exact) throw new Error(`stored content differs from the agent's: ${stored[0]!.content.length} of ${expected.length} characters`)
  return { seconds, rate: count / seconds, writes: stored[0]!.version, characters: expected.length }
}

/**
 * The mock agent's own output for the script, with no server: a bare JSON-RPC client on its stdio
 * collects every byte written after the prompt until the prompt's response. Also how fast the
 * agent alone writes them, which bounds any end-to-end figure. With `decode`, the client also
 * splits what it reads into lines and JSON.parses each as it arrives (the pipeline baseline) and
 * keeps no bytes; `updates` is then the session/update lines it parsed.
 */
async function captureAgentOutput(count: number, decode = false): Promise<{ bytes: Buffer; seconds: number; updates: number }> {
  const cwd = mkdtempSync(path.join(os.tmpdir(), 'tss-p3-agent-'))
  const [command, ...args] = MOCK_PROFILE.command as [string, ...string[]]
  const agent = spawn(command, args, { cwd, stdio: ['pipe', 'pipe', 'ignore'] })
  const send = (message: object) => agent.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n')
  try {
    const chunks: Buffer[] = []
    let text = ''
    let capturing = false
    let asked = false
    let started = 0
    let updates = 0
    let rest = ''
    const done = new Promise<number>((resolve, reject) => {
      agent.once('exit', (code) => reject(new Error(`mock agent exited (${code})`)))
      agent.stdout.on('data', (data: Buffer) => {
        if (capturing && decode) {
          const lines = (rest + data.toString('utf8')).split('\n')
          rest = lines.pop()!
          for (const line of lines) {
            const message = JSON.parse(line) as { id?: number; method?: string }
            if (message.method === 'session/update') updates++
            else if (message.id === 3) resolve(performance.now())
          }
          return
        }
        if (capturing) {
          chunks.push(data)
          // The prompt's response ends the capture; no update line contains `"id":3`.
          if (data.includes('"id":3,')) resolve(performance.now())
          return
        }
        text += data.toString()
        // The SDK takes session/new only once initialize has been answered.
        if (!text.includes('"id":1,')) return
        if (!asked) {
          asked = true
          send({ id: 2, method: 'session/new', params: { cwd, mcpServers: [] } })
        }
        const sessionLine = text.split('\n').find((l) => l.includes('"id":2,'))
        if (!sessionLine) return
        const sessionId = (JSON.parse(sessionLine) as { result: { sessionId: string } }).result.sessionId
        capturing = true
        started = performance.now()
        send({ id: 3, method: 'session/prompt', params: { sessionId, prompt: [{ type: 'text', text: script(count) }] } })
      })
    })
    send({ id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } })
    const ended = await bounded('mock agent capture', done)
    return { bytes: Buffer.concat(chunks), seconds: (ended - started) / 1000, updates }
  } finally {
    agent.kill('SIGKILL')
    rmSync(cwd, { recursive: true, force: true })
  }
}

/** Raw NDJSON decoding: bytes to text, split at newlines, JSON.parse each line. Median of a few runs. */
function rawDecode(bytes: Buffer): { rate: number; lines: number } {
  const times: number[] = []
  let updates = 0
  for (let r = 0; r < RAW_REPEATS; r++) {
    updates = 0
    const started = performance.now()
    const text = bytes.toString('utf8')
    for (let start = 0, end = text.indexOf('\n'); end !== -1; start = end + 1, end = text.indexOf('\n', start)) {
      const message = JSON.parse(text.slice(start, end)) as { method?: string }
      if (message.method === 'session/update') updates++
    }
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  return { rate: updates / (times[Math.floor(times.length / 2)]! / 1000), lines: updates }
}


const capture = await captureAgentOutput(CHUNKS)
if (rawDecode(capture.bytes).lines !== CHUNKS) throw new Error(`captured other than ${CHUNKS} updates`)

/** BENCH_P3_PROFILE=<dir>: CPU profiles of the server and of its mock agents there (where the time goes). */
const profileDir = process.env.BENCH_P3_PROFILE
const profileArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []
const [node, ...mockArgs] = MOCK_PROFILE.command as [string, ...string[]]
const server = await startBenchServer({
  handlers: new URL('./p3-ingest-server.ts', import.meta.url),
  execArgv: profileArgs,
  env: profileDir ? { AGENT_PROFILES: JSON.stringify({ mock: { command: [node, ...profileArgs, ...mockArgs] } }) } : {},
})
try {
  const call = server.call as Call
  const ids = await call('seed')
  if (WARMUP_CHUNKS > 0) await ingest(server, ids, WARMUP_CHUNKS)
  // What a turn costs apart from its chunks (dispatch, the final window's flush, TurnCompleted): one-chunk turns.
  const fixed: number[] = []
  for (let r = 0; r < 3; r++) fixed.push((await ingest(server, ids, 1)).seconds * 1000)
  const runs: Awaited<ReturnType<typeof ingest>>[] = []
  const raws: number[] = []
  const pipes: number[] = []
  /** The server process's CPU time (user + system) per chunk of each turn, in µs: steadier than a rate on a shared machine. */
  const cpus: number[] = []
  for (let r = 0; r < RUNS; r++) {
    const cpuBefore = await server.call<number>('cpu')
    runs.push(await ingest(server, ids, CHUNKS))
    cpus.push(((await server.call<number>('cpu')) - cpuBefore) / CHUNKS)
    raws.push(rawDecode(capture.bytes).rate)
    const pipe = await captureAgentOutput(CHUNKS, true)
    if (pipe.updates !== CHUNKS) throw new Error(`the bare reader parsed ${pipe.updates} updates, expected ${CHUNKS}`)
    pipes.push(CHUNKS / pipe.seconds)
  }
  const run = runs.find((r) => r.rate === median(runs.map((x) => x.rate)))!
  const raw = median(raws)
  const pipe = median(pipes)
  const stats = await call('coalescer', { sessionId: ids.sessionId })
  const agentRate = CHUNKS / capture.seconds
  const e2eRatio = ratio(run.rate, raw)
  const paired = runs.map((r, i) => r.rate / raws[i]!)
  const pairedPipe = runs.map((r, i) => r.rate / pipes[i]!)
  const spread = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}×`
  const rawBaseline = { label: 'raw: JSON.parse of the captured NDJSON, one process, no agent or pipe', value: raw }
  const pipeLabel = 'mock agent → bare NDJSON reader, no server'
  const turns = `${operationName(ClientAddMessageDocument)} → stored, ${CHUNKS} chunks, median of ${RUNS} turns`
  const rows: Row[] = [
    {
      metric: `ingest: ${turns} (throughput ratio)`,
      value: run.rate,
      unit: 'chunks/s',
      baseline: rawBaseline,
      goal: `≥ ${GOAL_RATE / 1000}k chunks/s and ≥ ${GOAL_RATIO}× raw`,
      met: run.rate >= GOAL_RATE && e2eRatio >= GOAL_RATIO,
    },
    { metric: `ingest: the same turns, against the pipeline without the server (throughput ratio)`, value: run.rate, unit: 'chunks/s', baseline: { label: `${pipeLabel}: two processes and a pipe, as a turn`, value: pipe } },
    { metric: `${pipeLabel}, median of ${RUNS} (throughput ratio)`, value: pipe, unit: 'chunks/s', baseline: rawBaseline },
    { metric: `server CPU per chunk, the same turns (median)`, value: median(cpus), unit: 'µs' },
    { metric: 'store writes of the message (create + appends)', value: run.writes, unit: 'writes' },
  ]
  report({
    id: 'P3',
    title: 'ingest: mock agent → coalescer → store',
    rows,
    notes: [
      `Turns of ${CHUNKS} one-item chunks (${run.characters} characters, ${capture.bytes.length} bytes of NDJSON) after a ${WARMUP_CHUNKS}-chunk warm-up turn, each followed by both baselines: ingest ${runs.map((r) => Math.round(r.rate)).join(', ')} chunks/s; raw ${raws.map(Math.round).join(', ')}; ${pipeLabel} ${pipes.map(Math.round).join(', ')}. Every stored message equals the agent's output character for character.`,
      `How stable the goal's ratio is: turn ÷ the raw measured right after it ${paired.map((x) => x.toFixed(2)).join(', ')} (${spread(paired)}); the row's ${e2eRatio.toFixed(2)}× is median ÷ median. Turn ÷ its ${pipeLabel}: ${pairedPipe.map((x) => x.toFixed(2)).join(', ')} (${spread(pairedPipe)}). On a machine with other load the ratios move by tenths from run to run; one run's figure is not a property of the server.`,
      `What the goal's raw baseline is not: it decodes bytes already in memory in one process, while a turn needs the agent to encode and write them (${Math.round(agentRate)} chunks/s alone, no reader's work), a pipe, and two processes sharing the cores; so the measured ratio (ingest ÷ raw) is bounded by the agent's own speed, not by the server alone. The ${pipeLabel} row is that bound measured (two processes, a pipe, split + JSON.parse), and the second row the server's share of it. A turn also has a fixed cost apart from its chunks, ${median(fixed).toFixed(0)} ms for a one-chunk turn (${operationName(ClientAddMessageDocument)} over HTTP, the final 100 ms window's flush, TurnCompleted), ${((median(fixed) / 1000) * run.rate / CHUNKS * 100).toFixed(0)}% of a ${CHUNKS}-chunk turn here.`,
      `Coalescer: ${stats?.received ?? '?'} chunks received (all turns), ${stats?.flushed ?? '?'} windowed appends; one write per 100 ms window, so store writes do not grow with the chunk rate.`,
      `Ingest only: the turn's end is observed in the server process and no client follows the session, so no sessionEvents delivery is part of this figure (P1 and P2 measure delivery).`,
      `What limits it, per chunk: the server decodes each line once (src/agents/chunk-merge.ts: a run's first line parsed whole, the lines continuing it by their text alone) and the ACP SDK validates and dispatches one joined notification per pipe read, so its schema parses, promise hops and the session runtime's work are per read, not per chunk; and the mock agent's own encoding.`,
      `What limits it, per second: about 10 store writes (one per 100 ms window), each compiled by Prisma's WebAssembly query compiler, which also copies the statement's parameters (the window's text) in one character at a time, and the projections they trigger: a CPU profile of the server (BENCH_P3_PROFILE=<dir>) puts Prisma at roughly a third of its time during a stream.`,
    ],
  })
} finally {
  await server.stop()
}
