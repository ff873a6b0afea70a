// P2 (`npm run bench:p2`): how long a small request waits on a connection whose reader is slow
// (its socket read at about 256 KB/s) while a session stream of 30,000 chunks floods it: the
// delivery lanes with the acknowledged send window (default limits), a plain FIFO (limits.fifo,
// what a stock graphql-ws server does) and the same reader with no flood (idle), in one run, for
// the two ways a client follows a stream (appends, or the whole message in every update). The
// client sends what the SDK sends (packages/client/src/operations): its sessionEvents subscription, and its
// ClientTaskRow query as the request. The server runs in a child process; this process is the client.
import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import { Kind, print, visit, type DocumentNode, type FragmentSpreadNode, type InlineFragmentNode, type SelectionNode } from 'graphql'
import { DEFAULT_LIMITS } from '../src/outbound/outbound-scheduler.ts'
import { rawGraphqlWs } from '../test/support/raw-ws.ts'
import { ClientSessionEventsDocument, ClientTaskRowDocument } from '../packages/client/src/generated/graphql.ts'
import { AddMessageDocument, StartSessionDocument } from '../test/generated/graphql.ts'
import { BENCH_ADMIN_TOKEN, startBenchServer, type BenchServer } from './server-process.ts'
import { report, scaled, type Row } from './scenario.ts'
import { quantile } from './support.ts'
import { clock, traceClient, writeTrace } from './p2-trace.ts'

// Short (BENCH_SHORT=1): one stream of 5,000 chunks per connection (~0.2 s), 50 idle requests.
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? scaled(30_000, 5_000))
/** Streams measured one after the other on each connection: one stream lasts about a second, ~50 requests. */
const ROUNDS = Number(process.env.BENCH_P2_ROUNDS ?? scaled(4, 1))
const READ_BYTES_PER_SECOND = 256 * 1024
const INTERVAL_MS = 20
/** Requests measured without a flood (10 s of them), and the bounds of every run. */
const IDLE_SAMPLES = Number(process.env.BENCH_P2_IDLE_SAMPLES ?? scaled(500, 50))
const MAX_SAMPLES = 6_000
const RUN_LIMIT_MS = 60_000
/** Responses still missing this long after the last request count with the age they reached. */
const DRAIN_LIMIT_MS = 15_000
const WARMUP_REQUESTS = 25
/** The send window is read this many requests into the first flood, once it has settled; a short flood is over by the 25th. */
const WINDOW_AT = scaled(25, 5)
/** A short stream first, so that both servers have compiled the streaming paths before measuring. */
const WARMUP_CHUNKS = 1_000

/** The request: the SDK's one-row read (what it sends for a summary delta of a task it lacks). */
const REQUEST = print(ClientTaskRowDocument)
const REQUEST_LABEL = 'SDK ClientTaskRow query'

/**
 * The SDK's sessionEvents document with MessageUpdated selecting `message { ...TranscriptMessageFields }`
 * (the whole content, as a v1.1 client does) instead of `message { ...StreamedMessageFields } append { offset text }`.
 */
function wholeContent(document: DocumentNode): DocumentNode {
  return visit(document, {
    // Its only spread is the one replaced below.
    FragmentDefinition: (node) => (node.name.value === 'StreamedMessageFields' ? null : undefined),
    InlineFragment(node: InlineFragmentNode) {
      if (node.typeCondition?.name.value !== 'MessageUpdated') return undefined
      const spread: FragmentSpreadNode = { kind: Kind.FRAGMENT_SPREAD, name: { kind: Kind.NAME, value: 'TranscriptMessageFields' } }
      const selections = node.selectionSet.selections.flatMap((selection): SelectionNode[] => {
        if (selection.kind !== Kind.FIELD || selection.name.value === 'append') return []
        if (selection.name.value !== 'message') return [selection]
        return [{ ...selection, selectionSet: { kind: Kind.SELECTION_SET, selections: [spread] } }]
      })
      return { ...node, selectionSet: { ...node.selectionSet, selections } }
    },
  })
}

/**
 * The two ways to follow a session. `append` (the SDK's ClientSessionEvents, contract v1.3):
 * MessageUpdated carries only what each update appended, in slices of at most 16 KiB, so a frame is
 * what the reader has not seen yet. `content` (a v1.1 client; the same document with the whole
 * message in MessageUpdated): every update carries the whole message, ~170 KB at the end of a
 * 30,000-chunk stream, 0.7 s of this reader; a frame is one WebSocket message, so a response
 * written after it waits for all of it whatever the scheduling.
 */
const FOLLOW = {
  append: {
    query: print(ClientSessionEventsDocument),
    label: 'SDK ClientSessionEvents, MessageUpdated { message { ...StreamedMessageFields } append { offset text } }',
  },
  content: {
    query: print(wholeContent(ClientSessionEventsDocument)),
    label: 'ClientSessionEvents with MessageUpdated { message { ...TranscriptMessageFields } } (v1.1: whole content)',
  },
} as const
type Follow = keyof typeof FOLLOW

interface Run {
  /** Round trips in ms, sorted; responses that never came count with the age they reached. */
  rtts: number[]
  missing: number
  floodMs: number
  bytesRead: number
  largestFrame: number
  /** Byte sizes of the MessageUpdated frames read, sorted. */
  updateFrames: number[]
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

type Client = Awaited<ReturnType<typeof rawGraphqlWs>>

/** Sends REQUEST on `client` and times each answer (open loop: a late answer does not delay the next request). */
function requester(client: Client, taskId: string, onFrame: (data: Buffer) => void = () => undefined) {
  const sentAt = new Map<string, number>()
  const rtts: number[] = []
  let n = 0
  let answered: (() => void) | undefined
  client.socket.on('message', (data: Buffer) => {
    const at = performance.now()
    // Only the head is parsed: the bench's own parsing must not slow this reader beyond its budget.
    const head = /^\{"id":"([^"]+)","type":"([a-z]+)"/.exec(data.subarray(0, 64).toString())
    const started = head && sentAt.get(head[1]!)
    if (started !== undefined && started !== null && head![2] === 'next') {
      sentAt.delete(head![1]!)
      rtts.push(at - started)
      answered?.()
    }
    onFrame(data)
  })
  return {
    rtts,
    sentAt,
    send() {
      const id = `q${n++}`
      sentAt.set(id, performance.now())
      client.send({ id, type: 'subscribe', payload: { query: REQUEST, variables: { id: taskId } } })
    },
    /** One request, answered (or 5 s passed). */
    async once() {
      const done = new Promise<void>((resolve) => (answered = resolve))
      this.send()
      await Promise.race([done, sleep(5_000)])
      answered = undefined
    },
    reset() {
      rtts.length = 0
      sentAt.clear()
    },
    /** Waits up to DRAIN_LIMIT_MS for the answers still missing; those count with the age they reached. */
    async drain(): Promise<number> {
      const until = performance.now() + DRAIN_LIMIT_MS
      while (sentAt.size > 0 && performance.now() < until) await sleep(50)
      const missing = sentAt.size
      for (const at of sentAt.values()) rtts.push(performance.now() - at)
      rtts.sort((a, b) => a - b)
      return missing
    },
  }
}

/**
 * One client following a session of its own with the SDK's sessionEvents document and sending
 * REQUEST every 20 ms, during ROUNDS floods (one stream each) or, without a flood, for IDLE_SAMPLES
 * requests. Its socket is read at READ_BYTES_PER_SECOND, or as fast as it comes (`unthrottled`:
 * the same load, and what the server itself takes to answer while it streams).
 */
async function measure(server: BenchServer, flood: boolean, follow: Follow = 'append', unthrottled = false): Promise<Run> {
  const { taskId } = await server.call<{ taskId: string }>('seed')
  const sessionId = (await graphql<{ startSession: { id: string } }>(server, print(StartSessionDocument), { input: { taskId } })).startSession.id
  const client = await rawGraphqlWs(server.wsUrl, BENCH_ADMIN_TOKEN)
  const traceFile = flood && follow === 'append' && !unthrottled ? process.env.BENCH_P2_TRACE : undefined
  const traced = traceFile ? traceClient((client.socket as unknown as { _socket: Socket })._socket, client.socket) : undefined
  if (!unthrottled) client.throttleReading(READ_BYTES_PER_SECOND)
  let bytesRead = 0
  ;(client.socket as unknown as { _socket: Socket })._socket.on('data', (chunk: Buffer) => (bytesRead += chunk.length))
  let largestFrame = 0
  const updateFrames: number[] = []
  let turnsCompleted = 0
  let turnEnded: (() => void) | undefined
  const requests = requester(client, taskId, (data) => {
    largestFrame = Math.max(largestFrame, data.length)
    const head = data.subarray(0, 128).toString()
    if (head.startsWith('{"id":"events"') && head.includes('"__typename":"MessageUpdated"')) updateFrames.push(data.length)
    else if (head.startsWith('{"id":"events"') && data.includes('"TurnCompleted"')) {
      turnsCompleted++
      turnEnded?.()
    }
  })
  client.send({ id: 'events', type: 'subscribe', payload: { query: FOLLOW[follow].query, variables: { sessionId } } })
  const stream = (chunks: number) =>
    graphql(server, print(AddMessageDocument), {
      input: { taskId, sessionId, clientMessageId: randomUUID(), content: JSON.stringify({ script: [{ stream: { kind: 'message', count: chunks } }] }) },
    })
  const turns = async (count: number) => {
    const until = performance.now() + RUN_LIMIT_MS
    while (turnsCompleted < count && performance.now() < until) await new Promise<void>((resolve) => ((turnEnded = resolve), setTimeout(resolve, 1_000)))
    turnEnded = undefined
    if (turnsCompleted < count) throw new Error(`turn ${count} did not complete`)
  }
  // Warm-up, not measured: a short stream, then requests one at a time.
  await stream(WARMUP_CHUNKS)
  await turns(1)
  for (let i = 0; i < WARMUP_REQUESTS; i++) await requests.once()
  requests.reset()

  const sends: [number, string][] = []
  if (traced) {
    await server.call('traceStart')
    const send = client.send.bind(client)
    client.send = (message: { id?: string }) => (sends.push([clock(), message.id ?? '']), send(message))
  }
  const started = performance.now()
  let windows: Run['windows'] = []
  let i = 0
  const paced = async (until: () => boolean) => {
    for (; !until(); i++) {
      if (i >= MAX_SAMPLES || performance.now() - started >= RUN_LIMIT_MS) break
      requests.send()
      // Halfway through the first flood the window has settled on the reader's pace.
      if (flood && i === WINDOW_AT) windows = await server.call<Run['windows']>('windows')
      // A late request goes at once (a negative timeout only earns Node's TimeoutNegativeWarning).
      await sleep(Math.max(0, started + (i + 1) * INTERVAL_MS - performance.now()))
    }
  }
  if (!flood) await paced(() => i >= IDLE_SAMPLES)
  else {
    for (let round = 0; round < ROUNDS; round++) {
      const target = turnsCompleted + 1
      await stream(CHUNKS)
      await paced(() => turnsCompleted >= target)
    }
  }
  const floodMs = performance.now() - started
  const missing = await requests.drain()
  client.socket.terminate()
  if (traceFile) writeTrace(traceFile, { ...traced, sends, server: await server.call('traceTake') })
  updateFrames.sort((a, b) => a - b)
  return { rtts: requests.rtts, missing, floodMs, bytesRead, largestFrame, updateFrames, windows }
}

/** BENCH_P2_PROFILE=<dir>: a CPU profile of each server process there (where its time goes during the streams). */
const profileDir = process.env.BENCH_P2_PROFILE
const execArgv = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []

async function withServer<T>(fifo: boolean, body: (server: BenchServer) => Promise<T>): Promise<T> {
  const server = await startBenchServer({ handlers: new URL('./p2-handlers.ts', import.meta.url), start: { deliveryLimits: { ...DEFAULT_LIMITS, fifo } }, execArgv })
  try {
    return await body(server)
  } finally {
    await server.stop()
  }
}

const lanesServer = await withServer(false, async (server) => ({
  idle: await measure(server, false),
  append: await measure(server, true, 'append'),
  unthrottled: await measure(server, true, 'append', true),
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
// Every row names the request, and the selection the flooded connection follows the stream with.
const APPEND = FOLLOW.append.label
const CONTENT = FOLLOW.content.label
const rows: Row[] = [
  { metric: `p50 ${REQUEST_LABEL} response, idle (${APPEND}, no stream)`, value: ms(idle, 0.5), unit: 'ms' },
  { metric: `p99 ${REQUEST_LABEL} response, idle (${APPEND}, no stream)`, value: ms(idle, 0.99), unit: 'ms' },
  { metric: `p50 ${REQUEST_LABEL} response, lanes, ${APPEND}`, value: ms(lanes.append, 0.5), unit: 'ms', baseline: vsIdle(0.5) },
  { metric: `p99 ${REQUEST_LABEL} response, lanes, ${APPEND}`, value: ms(lanes.append, 0.99), unit: 'ms', baseline: vsIdle(0.99), goal: '≤ 50 ms and ≤ 2× idle', met: goalMet },
  {
    metric: `p99 ${REQUEST_LABEL} response, lanes, ${APPEND}, socket read as fast as it comes (the server's own time)`,
    value: ms(lanes.unthrottled, 0.99),
    unit: 'ms',
    baseline: vsIdle(0.99),
  },
  { metric: `p99 ${REQUEST_LABEL} response, lanes vs FIFO, ${APPEND}`, value: ms(lanes.append, 0.99), unit: 'ms', baseline: vsFifo(fifo.append, 0.99) },
  { metric: `p50 ${REQUEST_LABEL} response, lanes, ${CONTENT}`, value: ms(lanes.content, 0.5), unit: 'ms', baseline: vsFifo(fifo.content, 0.5) },
  {
    metric: `p99 ${REQUEST_LABEL} response, lanes, ${CONTENT}`,
    value: ms(lanes.content, 0.99),
    unit: 'ms',
    baseline: vsFifo(fifo.content, 0.99),
    goal: '< plain FIFO',
    met: ms(lanes.content, 0.99) < ms(fifo.content, 0.99),
  },
  { metric: `p99 ${REQUEST_LABEL} response, plain FIFO, ${CONTENT}`, value: ms(fifo.content, 0.99), unit: 'ms', baseline: vsIdle(0.99) },
]
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`
const readMs = (bytes: number) => ((bytes / READ_BYTES_PER_SECOND) * 1000).toFixed(0)
const settled = (run: Run) => run.windows.flatMap((w) => (w ? [kib(w.size)] : [])).join(', ') || 'n/a'
const describe = (name: string, run: Run) =>
  `${name}: ${run.rtts.length} requests over ${(run.floodMs / 1000).toFixed(1)} s` +
  `${run.missing ? ` (${run.missing} unanswered ${DRAIN_LIMIT_MS / 1000} s after the last, counted at the age they reached)` : ''}, ` +
  `${kib(run.bytesRead)} read (${(run.bytesRead / 1024 / (run.floodMs / 1000)).toFixed(0)} KiB/s), largest frame ${kib(run.largestFrame)}, ` +
  `${run.updateFrames.length} MessageUpdated frames (median ${kib(quantile(run.updateFrames, 0.5) || 0)}, largest ${kib(run.updateFrames.at(-1) ?? 0)}), ` +
  `response p50 ${ms(run, 0.5).toFixed(1)} ms`
report({
  id: 'P2',
  title:
    `control lane: the ${REQUEST_LABEL} every ${INTERVAL_MS} ms on a connection read at ${READ_BYTES_PER_SECOND / 1024} KB/s ` +
    `that follows its session with the SDK's ClientSessionEvents, flooded by ${ROUNDS} streams of ${CHUNKS} chunks (one after the other)`,
  rows,
  notes: [
    `Operations: the request is the ${REQUEST_LABEL} (packages/client/src/operations/queries.graphql); the stream is followed with the SDK's ` +
      `ClientSessionEvents subscription (MessageUpdated { message { ...StreamedMessageFields } append { offset text } }), or for "whole content" ` +
      `the same document with MessageUpdated { message { ...TranscriptMessageFields } } (a v1.1 client).`,
    describe('idle', idle),
    describe('lanes, appends', lanes.append),
    describe('lanes, appends, socket read as fast as it comes', lanes.unthrottled),
    describe('plain FIFO, appends', fifo.append),
    describe('lanes, whole content', lanes.content),
    describe('plain FIFO, whole content', fifo.content),
    `Lanes: a response waits for the send window (bytes written, not yet acknowledged by a pong), sized to the reader's pace × ` +
      `${DEFAULT_LIMITS.sendWindow?.targetDelayMs ?? '(no window)'} ms (it stood at ${settled(lanes.append)} with appends, ${settled(lanes.content)} with whole content, ` +
      `${WINDOW_AT} requests into the first flood), plus at most one frame already written, plus the reader's own pause (its token bucket waits out each read that overdraws it).`,
    `Appends: the mock agent writes the stream in bursts far above this reader's pace, so a coalescing window's append (merged with any the ` +
      `reader has not taken yet) is large; it goes out in slices (contract v1.3: at most 16 KiB of text, slices may share a version, clients ` +
      `apply them by offset), one per turn of the lane, each cut to what the send window still takes (at least 2 KiB), so a response waits for ` +
      `about the window, not for the whole append nor a 16 KiB slice (${readMs(16 * 1024)} ms of this reader): the median MessageUpdated frame ` +
      `was ${kib(quantile(lanes.append.updateFrames, 0.5) || 0)}, the largest ${kib(lanes.append.updateFrames.at(-1) ?? 0)} ` +
      `(${readMs(lanes.append.updateFrames.at(-1) ?? 0)} ms; larger while a burst of reading inflates the window's pace estimate).`,
    `Whole content: every update is the whole message, so the reader falls behind; the lanes replace undelivered updates, but a response written ` +
      `after a frame waits for all of it (largest frame ÷ 256 KB/s). Plain FIFO: a response waits behind every update queued before it, in the ` +
      `process and in the kernel's socket buffers (several MB on loopback).`,
    `Read as fast as it comes, the same connection with the same streams and requests measures the server's own time to answer while it ` +
      `streams (its CPU shared with the agent process, the store and the projector, and on a busy machine with other work): what the ` +
      `256 KB/s reader's responses wait beyond it is the lane.`,
  ],
})
