// P2 (`npm run bench:p2`): how long a small request waits on a connection whose reader is slow
// (its socket read at about 256 KB/s) while a session stream of 30,000 chunks floods it: the
// delivery lanes with the acknowledged send window (default limits), a plain FIFO (limits.fifo,
// what a stock graphql-ws server does) and the same reader with no flood (idle), in one run, for
// the two ways a client follows a stream (appends, or the whole message in every update). The
// server runs in a child process; this process is the client.
import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import { print } from 'graphql'
import { DEFAULT_LIMITS } from '../src/delivery/outbound-scheduler.ts'
import { rawGraphqlWs } from '../test/support/raw-ws.ts'
import { AddMessageDocument, FocusSessionDocument, StartSessionDocument } from '../test/generated/graphql.ts'
import { BENCH_ADMIN_TOKEN, startBenchServer, type BenchServer } from './server-process.ts'
import { report, type Row } from './scenario.ts'
import { quantile } from './support.ts'

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 30_000)
const READ_BYTES_PER_SECOND = 256 * 1024
const INTERVAL_MS = 20
/** Requests measured without a flood (10 s of them), and the bounds of every run. */
const IDLE_SAMPLES = Number(process.env.BENCH_P2_IDLE_SAMPLES ?? 500)
const MAX_SAMPLES = 6_000
const RUN_LIMIT_MS = 60_000
/** Responses still missing this long after the last request count with the age they reached. */
const DRAIN_LIMIT_MS = 15_000
const WARMUP_REQUESTS = 25
/** A short stream first, so that both servers have compiled the streaming paths before measuring. */
const WARMUP_CHUNKS = 1_000

/**
 * The two ways to follow a session. `append` (contract v1.2; what the page's SDK selects): MessageUpdated
 * carries only what each update appended, in slices of at most 16 KiB (v1.3), so a frame is what the
 * reader has not seen yet. `content` (a v1.1 client): every update carries the whole message, ~170 KB at the end of a
 * 30,000-chunk stream, 0.7 s of this reader; a frame is one WebSocket message, so a response
 * written after it waits for all of it whatever the scheduling.
 */
const FOLLOW = {
  append: 'message { id kind version status } append { offset text }',
  content: 'message { id kind version status content }',
} as const
type Follow = keyof typeof FOLLOW
const sessionEvents = (follow: Follow) => `subscription ($sessionId: ID!) {
  sessionEvents(sessionId: $sessionId) {
    __typename
    ... on MessageAdded { message { id kind author version content } }
    ... on MessageUpdated { ${FOLLOW[follow]} }
    ... on TurnCompleted { turn { id } }
  }
}`

interface Run {
  /** Round trips in ms, sorted; responses that never came count with the age they reached. */
  rtts: number[]
  missing: number
  floodMs: number
  bytesRead: number
  largestFrame: number
  windows: Array<{ size: number; inFlight: number } | null>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function graphql<T>(server: BenchServer, query: string, variables: object): Promise<T> {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  })
  const body = (await response.json()) as { data?: T; errors?: unknown }
  if (!body.data) throw new Error(`request failed: ${JSON.stringify(body.errors)}`)
  return body.data
}

/**
 * One throttled client following a session of its own and sending focusSession every 20 ms
 * (open loop: a late response does not delay the next request), during the flood or, without
 * one, for IDLE_SAMPLES requests.
 */
async function measure(server: BenchServer, flood: boolean, follow: Follow = 'append'): Promise<Run> {
  const { taskId } = await server.call<{ taskId: string }>('seed')
  const sessionId = (await graphql<{ startSession: { id: string } }>(server, print(StartSessionDocument), { input: { taskId } })).startSession.id
  const client = await rawGraphqlWs(server.wsUrl, BENCH_ADMIN_TOKEN)
  client.throttleReading(READ_BYTES_PER_SECOND)
  let bytesRead = 0
  ;(client.socket as unknown as { _socket: Socket })._socket.on('data', (chunk: Buffer) => (bytesRead += chunk.length))
  const sentAt = new Map<string, number>()
  const rtts: number[] = []
  let largestFrame = 0
  let turnsCompleted = 0
  let answered: (() => void) | undefined
  client.socket.on('message', (data: Buffer) => {
    const at = performance.now()
    largestFrame = Math.max(largestFrame, data.length)
    // Only the head is parsed: the bench's own parsing must not slow this reader beyond its budget.
    const head = /^\{"id":"([^"]+)","type":"([a-z]+)"/.exec(data.subarray(0, 64).toString())
    const started = head && sentAt.get(head[1]!)
    if (started !== undefined && started !== null && head![2] === 'next') {
      sentAt.delete(head![1]!)
      rtts.push(at - started)
      answered?.()
    } else if (head?.[1] === 'events' && data.includes('"TurnCompleted"')) {
      turnsCompleted++
      answered?.()
    }
  })
  client.send({ id: 'events', type: 'subscribe', payload: { query: sessionEvents(follow), variables: { sessionId } } })
  const focus = print(FocusSessionDocument)
  let n = 0
  const request = () => {
    const id = `q${n++}`
    sentAt.set(id, performance.now())
    client.send({ id, type: 'subscribe', payload: { query: focus, variables: { sessionId } } })
  }
  const stream = (chunks: number) =>
    graphql(server, print(AddMessageDocument), {
      input: { taskId, sessionId, clientMessageId: randomUUID(), content: JSON.stringify({ script: [{ stream: { kind: 'message', count: chunks } }] }) },
    })
  // Warm-up, not measured: a short stream, then requests one at a time.
  await stream(WARMUP_CHUNKS)
  const warmedUntil = performance.now() + RUN_LIMIT_MS
  while (turnsCompleted < 1 && performance.now() < warmedUntil) await new Promise<void>((resolve) => ((answered = resolve), setTimeout(resolve, 1_000)))
  if (turnsCompleted < 1) throw new Error('the warm-up stream did not complete')
  for (let i = 0; i < WARMUP_REQUESTS; i++) {
    const done = new Promise<void>((resolve) => (answered = resolve))
    request()
    await Promise.race([done, sleep(5_000)])
  }
  answered = undefined
  rtts.length = 0
  sentAt.clear()

  const started = performance.now()
  if (flood) await stream(CHUNKS)
  let windows: Run['windows'] = []
  for (let i = 0; ; i++) {
    const elapsed = performance.now() - started
    if (flood ? turnsCompleted > 1 : i >= IDLE_SAMPLES) break
    if (i >= MAX_SAMPLES || elapsed >= RUN_LIMIT_MS) break
    request()
    // Halfway through the flood the window has settled on the reader's pace.
    if (flood && i === 50) windows = await server.call<Run['windows']>('windows')
    await sleep(started + (i + 1) * INTERVAL_MS - performance.now())
  }
  const floodMs = performance.now() - started
  const drainUntil = performance.now() + DRAIN_LIMIT_MS
  while (sentAt.size > 0 && performance.now() < drainUntil) await sleep(50)
  const missing = sentAt.size
  for (const at of sentAt.values()) rtts.push(performance.now() - at)
  client.socket.terminate()
  rtts.sort((a, b) => a - b)
  return { rtts, missing, floodMs, bytesRead, largestFrame, windows }
}

async function withServer<T>(fifo: boolean, body: (server: BenchServer) => Promise<T>): Promise<T> {
  const server = await startBenchServer({ handlers: new URL('./p2-handlers.ts', import.meta.url), start: { deliveryLimits: { ...DEFAULT_LIMITS, fifo } } })
  try {
    return await body(server)
  } finally {
    await server.stop()
  }
}

const lanesServer = await withServer(false, async (server) => ({
  idle: await measure(server, false),
  append: await measure(server, true, 'append'),
  content: await measure(server, true, 'content'),
}))
const fifoServer = await withServer(true, async (server) => ({
  append: await measure(server, true, 'append'),
  content: await measure(server, true, 'content'),
}))
const { idle } = lanesServer

const ms = (run: Run, q: number) => quantile(run.rtts, q)
const lanes = lanesServer
const fifo = fifoServer
const goalMet = ms(lanes.append, 0.99) <= 50 && ms(lanes.append, 0.99) <= 2 * ms(idle, 0.99)
const vsIdle = (q: number) => ({ label: 'idle', value: ms(idle, q) })
const vsFifo = (run: Run, q: number) => ({ label: 'plain FIFO', value: ms(run, q) })
const rows: Row[] = [
  { metric: 'p50 response, idle', value: ms(idle, 0.5), unit: 'ms' },
  { metric: 'p99 response, idle', value: ms(idle, 0.99), unit: 'ms' },
  { metric: 'p50 response, lanes, appends', value: ms(lanes.append, 0.5), unit: 'ms', baseline: vsIdle(0.5) },
  { metric: 'p99 response, lanes, appends', value: ms(lanes.append, 0.99), unit: 'ms', baseline: vsIdle(0.99), goal: '≤ 50 ms and ≤ 2× idle', met: goalMet },
  { metric: 'p99 response, lanes vs FIFO, appends', value: ms(lanes.append, 0.99), unit: 'ms', baseline: vsFifo(fifo.append, 0.99) },
  { metric: 'p50 response, lanes, whole content', value: ms(lanes.content, 0.5), unit: 'ms', baseline: vsFifo(fifo.content, 0.5) },
  { metric: 'p99 response, lanes, whole content', value: ms(lanes.content, 0.99), unit: 'ms', baseline: vsFifo(fifo.content, 0.99), goal: '< plain FIFO', met: ms(lanes.content, 0.99) < ms(fifo.content, 0.99) },
  { metric: 'p99 response, plain FIFO, whole content', value: ms(fifo.content, 0.99), unit: 'ms', baseline: vsIdle(0.99) },
]
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`
const readMs = (bytes: number) => ((bytes / READ_BYTES_PER_SECOND) * 1000).toFixed(0)
const settled = (run: Run) => run.windows.flatMap((w) => (w ? [kib(w.size)] : [])).join(', ') || 'n/a'
const describe = (name: string, run: Run) =>
  `${name}: ${run.rtts.length} requests over ${(run.floodMs / 1000).toFixed(1)} s` +
  `${run.missing ? ` (${run.missing} unanswered ${DRAIN_LIMIT_MS / 1000} s after the last, counted at the age they reached)` : ''}, ` +
  `${kib(run.bytesRead)} read (${(run.bytesRead / 1024 / (run.floodMs / 1000)).toFixed(0)} KiB/s), largest frame ${kib(run.largestFrame)}`
report({
  id: 'P2',
  title: `control lane: focusSession every ${INTERVAL_MS} ms on a connection read at ${READ_BYTES_PER_SECOND / 1024} KB/s, flooded by a ${CHUNKS}-chunk stream`,
  rows,
  notes: [
    describe('idle', idle),
    describe('lanes, appends', lanes.append),
    describe('plain FIFO, appends', fifo.append),
    describe('lanes, whole content', lanes.content),
    describe('plain FIFO, whole content', fifo.content),
    `Lanes: a response waits for the send window (bytes written, not yet acknowledged by a pong), sized to the reader's pace × ` +
      `${DEFAULT_LIMITS.sendWindow?.targetDelayMs ?? "(no window)"} ms (it stood at ${settled(lanes.append)} with appends, ${settled(lanes.content)} with whole content, ` +
      `50 requests into the flood), plus at most one frame already written, plus the reader's own pause (its token bucket waits out each read that overdraws it).`,
    `Appends: the mock agent writes the stream in bursts far above this reader's pace, so a coalescing window's append (merged with any the ` +
      `reader has not taken yet) is large; it goes out in slices of at most 16 KiB of text (contract v1.3: slices may share a version, clients ` +
      `apply them by offset), one per turn of the lane, so a response waits for at most one slice: the largest frame, ` +
      `${kib(lanes.append.largestFrame)}, takes this reader ${readMs(lanes.append.largestFrame)} ms (p99 ${ms(lanes.append, 0.99).toFixed(0)} ms).`,
    `Whole content: every update is the whole message, so the reader falls behind; the lanes replace undelivered updates, but a response written ` +
      `after a frame waits for all of it (largest frame ÷ 256 KB/s). Plain FIFO: a response waits behind every update queued before it, in the ` +
      `process and in the kernel's socket buffers (several MB on loopback).`,
  ],
})
