// `npm run bench:append`: what one long agent stream costs a follower and the server. An agent
// process streams one message of 10 MB, the content of the mock agent's
// `{"stream":{"kind":"message","count":1388890}}` ("0;1;2;…"), while two followers, each on its
// own graphql-ws connection, watch the session side by side:
//   - append:  selects `MessageUpdated.append { offset text }` and `message { id version status }`,
//              rebuilds the content from appends and reads the message (Session.message) only when
//              `append` is null (as the contract says);
//   - content: selects `message { id version status content }` (full-content updates, the baseline).
// Each follower counts the raw WebSocket bytes it receives (its refetch answers included), and its
// rebuilt content is compared byte for byte with `session.messages` at the end.
// The agent is bench/stream-agent.ts (100 items a chunk, paced over BENCH_APPEND_SECONDS): the
// mock sends one notification per item, and 1.4 million of them take minutes on two cores.
// BENCH_APPEND_AGENT=mock runs the mock agent's own script instead (same content, much slower).
// Targets: bytes to the append follower ≤ 1.2× the streamed content; server heap growth while the
// message streams ≤ 3× its size.
//
// Heap: the server runs in its own process (node --expose-gc) so the followers' allocations do not
// count. A sampler in that process forces a full GC every HEAP_SAMPLE_MS and records heapUsed +
// external (Buffers and off-heap strings are copies too): the peak of those samples over a
// stream, minus the same after GC with the server idle just before it, is the growth (what the
// stream keeps alive: coalescer, store reads, queued frames). Forced GC is what makes it a measure
// of retained memory rather than of how lazily V8 collects; the peak seen between GCs (garbage
// included) and the RSS growth are printed alongside. Stream 1 has both followers (bytes side by
// side; heap with a full-content subscriber), stream 2 the append follower alone.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Client } from 'graphql-ws'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/app/start-server.ts'
import type { StreamPrompt } from './stream-agent.ts'
import { forkServer, countingClient } from './support.ts'

/** Items 0..N-1 of "i;": 1,388,890 of them make 10.0 MB. */
const ITEMS = Number(process.env.BENCH_APPEND_ITEMS ?? 1_388_890)
const ITEMS_PER_CHUNK = 100
const STREAM_SECONDS = Number(process.env.BENCH_APPEND_SECONDS ?? 20)
const AGENT = process.env.BENCH_APPEND_AGENT === 'mock' ? 'mock' : 'bench-stream'
const here = path.dirname(fileURLToPath(import.meta.url))
const HEAP_SAMPLE_MS = Number(process.env.BENCH_HEAP_SAMPLE_MS ?? 500)
const RAW_SAMPLE_MS = 20
const BYTES_TARGET = 1.2
const HEAP_TARGET = 3
const adminToken = 'bench-admin-token-0123456789'

type ToServer = { type: 'sample-start' } | { type: 'sample-stop' } | { type: 'stop' }
type HeapReport = { idle: number; peakLive: number; peakRaw: number; idleRss: number; peakRss: number; samples: number }
type FromServer = { type: 'ready'; url: string } | ({ type: 'heap' } & HeapReport)

/**
 * The JS heap plus V8's external memory: Buffers, socket queues and large strings made outside the
 * heap (a big latin1 Buffer.toString, for one) live there, and a copy kept there is a copy too.
 */
const heapBytes = () => {
  const { heapUsed, external } = process.memoryUsage()
  return heapUsed + external
}

/** Several passes free what finalizers and weak references release; the idle baseline takes them. */
const gcHeap = (passes: number) => {
  const gc = (globalThis as { gc?: () => void }).gc!
  for (let i = 0; i < passes; i++) gc()
  return heapBytes()
}

async function runServer() {
  if (!(globalThis as { gc?: () => void }).gc) throw new Error('the server process needs --expose-gc')
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-append-'))
  const server = await startServer(
    loadConfig({
      PORT: '0',
      DATABASE_URL: `file:${path.join(dir, 'b.db')}`,
      ADMIN_TOKEN: adminToken,
      REPOSITORY_ROOTS: os.tmpdir(),
      AGENT_PROFILES: JSON.stringify({
        'bench-stream': { command: [process.execPath, '--import', import.meta.resolve('tsx'), path.join(here, 'stream-agent.ts')] },
      }),
    }),
    { logger: pino({ level: 'silent' }) },
  )
  const send = (message: FromServer) => process.send!(message)
  let report: HeapReport | undefined
  const timers: NodeJS.Timeout[] = []
  process.on('message', (message: ToServer) => {
    if (message.type === 'sample-start') {
      const idle = gcHeap(3)
      const idleRss = process.memoryUsage().rss
      const r: HeapReport = { idle, peakLive: idle, peakRaw: idle, idleRss, peakRss: idleRss, samples: 0 }
      report = r
      timers.push(
        setInterval(() => {
          r.peakRaw = Math.max(r.peakRaw, heapBytes())
          r.peakRss = Math.max(r.peakRss, process.memoryUsage().rss)
        }, RAW_SAMPLE_MS),
        setInterval(() => {
          r.peakRaw = Math.max(r.peakRaw, heapBytes())
          r.peakLive = Math.max(r.peakLive, gcHeap(1))
          r.samples++
        }, HEAP_SAMPLE_MS),
      )
    } else if (message.type === 'sample-stop') {
      for (const t of timers.splice(0)) clearInterval(t)
      send({ type: 'heap', ...report! })
    } else {
      server
        .close()
        .catch((error: unknown) => console.error(error))
        .finally(() => {
          rmSync(dir, { recursive: true, force: true })
          process.exit(0)
        })
    }
  })
  send({ type: 'ready', url: server.url })
}


async function graphql<T>(url: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({ query, variables }),
  })
  const body = (await res.json()) as { data?: T; errors?: unknown[] }
  if (body.errors) throw new Error(`GraphQL error: ${JSON.stringify(body.errors)}`)
  return body.data!
}

async function request<T>(client: Client, query: string, variables: Record<string, unknown>): Promise<T> {
  const results = client.iterate<T>({ query, variables })
  try {
    const result = await results.next()
    if (result.done || result.value.errors) throw new Error(`GraphQL error: ${JSON.stringify(result.value)}`)
    return result.value.data!
  } finally {
    await results.return?.()
  }
}

interface Msg {
  id: string
  version: number
  status: string | null
  kind: string
  author: string
  content?: string
}
type Event =
  | { __typename: 'MessageAdded'; message: Msg }
  | { __typename: 'MessageUpdated'; message: Msg; append?: { offset: number; text: string } | null }
  | { __typename: 'TurnCompleted'; turn: { id: string; lifecycleOnly: boolean } }
  | { __typename: string }

const MESSAGE_FIELDS = 'id version status kind author'
const subscriptionFor = (mode: Mode) => `subscription Follow($sessionId: ID!) {
  sessionEvents(sessionId: $sessionId) {
    __typename
    ... on MessageAdded { message { ${MESSAGE_FIELDS} content } }
    ... on MessageUpdated { message { ${MESSAGE_FIELDS}${mode === 'content' ? ' content' : ''} }${mode === 'append' ? ' append { offset text }' : ''} }
    ... on TurnCompleted { turn { id lifecycleOnly } }
  }
}`
/** One message, whole (Session.message): the read after a null append, as the SDK makes it. */
const MESSAGE = `query Message($sessionId: ID!, $id: ID!) { session(id: $sessionId) { message(id: $id) { id version status content } } }`

type Mode = 'append' | 'content'

interface Outcome {
  mode: Mode
  bytes: number
  frames: number
  updates: number
  appends: number
  refetches: number
  stale: number
  exact: boolean
  /** The message's status as the follower last saw it, and as stored. */
  status: string | null
  storedStatus: string | null
}

/** One graphql-ws connection following the session's events and rebuilding its agent messages. */
function follower(mode: Mode, wsUrl: string, sessionId: string) {
  const { client, tally } = countingClient(wsUrl, adminToken)
  const stats = { updates: 0, appends: 0, refetches: 0, stale: 0 }
  const local = new Map<string, { version: number; content: string; status: string | null }>()
  const state = { turnCompleted: false, failure: undefined as Error | undefined }
  let work = Promise.resolve()
  const refetch = async (messageId: string) => {
    stats.refetches++
    const data = await request<{ session: { message: { id: string; version: number; content: string; status: string | null } | null } }>(client, MESSAGE, {
      sessionId,
      id: messageId,
    })
    const row = data.session.message
    if (!row) throw new Error(`message ${messageId} not in session ${sessionId}`)
    const mine = local.get(messageId)
    if (!mine || row.version >= mine.version) local.set(messageId, { version: row.version, content: row.content, status: row.status })
  }
  const handle = async (event: Event) => {
    if (event.__typename === 'TurnCompleted' && !(event as Extract<Event, { __typename: 'TurnCompleted' }>).turn.lifecycleOnly) state.turnCompleted = true
    if (event.__typename === 'MessageAdded') {
      const { message } = event as Extract<Event, { __typename: 'MessageAdded' }>
      if (message.author === 'AGENT') local.set(message.id, { version: message.version, content: message.content!, status: message.status })
    }
    if (event.__typename !== 'MessageUpdated') return
    const { message, append } = event as Extract<Event, { __typename: 'MessageUpdated' }>
    stats.updates++
    const mine = local.get(message.id)
    if (mode === 'content') {
      // Already holds this version or a newer one (a refetch answer overtook the frame).
      if (mine && message.version <= mine.version) stats.stale++
      else local.set(message.id, { version: message.version, content: message.content!, status: message.status })
    } else if (append && mine && append.offset === mine.content.length) {
      // Contract v1.3: applied at the length held whatever the version (16 KiB slices share one).
      stats.appends++
      const status = message.version >= mine.version ? message.status : mine.status
      local.set(message.id, { version: Math.max(message.version, mine.version), content: mine.content + append.text, status })
    } else if (append && mine && append.offset + append.text.length <= mine.content.length) stats.stale++ // in a refetch answer already
    else if (append && mine && append.offset > mine.content.length) throw new Error(`append at ${append.offset} leaves a gap after local content of length ${mine.content.length}`)
    else if (!append && mine && message.version <= mine.version) stats.stale++
    // The contract's answer to a null append (or an append across the end of a newer read): read
    // message.content (its bytes count like any other).
    else await refetch(message.id)
  }
  // One event at a time, in order: frames behind a refetch wait for its answer, as in a real client.
  const onEvent = (event: Event) => {
    work = work.then(() => handle(event)).catch((error: unknown) => void (state.failure ??= error as Error))
  }
  const joined = new Promise<void>((resolve, reject) => {
    client.subscribe<{ sessionEvents: Event }>(
      { query: subscriptionFor(mode), variables: { sessionId } },
      {
        next: (r) => {
          if (r.errors) state.failure ??= new Error(JSON.stringify(r.errors))
          else if (r.data?.sessionEvents.__typename === 'SessionJoined') resolve()
          else if (r.data) onEvent(r.data.sessionEvents)
        },
        error: (error: unknown) => {
          state.failure ??= error instanceof Error ? error : new Error(JSON.stringify(error))
          reject(state.failure)
        },
        complete: () => undefined,
      },
    )
  })
  return {
    mode,
    tally,
    joined,
    state,
    streamed: (length: number) => [...local.values()].some((m) => m.content.length >= length),
    settled: () => work,
    async finish(stored: { id: string; content: string; status: string | null }, expected: string): Promise<Outcome> {
      await client.dispose()
      const mine = local.get(stored.id)
      const exact = stored.content === expected && mine?.content === expected
      return { mode, bytes: tally.bytes, frames: tally.frames, exact, status: mine?.status ?? null, storedStatus: stored.status, ...stats }
    },
  }
}

type Phase = { seconds: number; heap: HeapReport; results: Outcome[]; size: number }

/** One stream of the whole message to a new session, followed by one follower per mode. */
async function streamOnce(url: string, workspaceId: string, expected: string, modes: Mode[], heap: () => Promise<HeapReport>, sampleStart: () => void): Promise<Phase> {
  const { task } = await graphql<{ task: { id: string } }>(url, `mutation($w: ID!) { task: createTask(input: { workspaceId: $w, title: "stream" }) { id } }`, {
    w: workspaceId,
  })
  const { startSession: session } = await graphql<{ startSession: { id: string } }>(
    url,
    `mutation($t: ID!, $p: String!) { startSession(input: { taskId: $t, agentProfile: $p }) { id } }`,
    { t: task.id, p: AGENT },
  )
  const wsUrl = `${url.replace('http', 'ws')}/graphql`
  const followers = modes.map((mode) => follower(mode, wsUrl, session.id))
  // The SessionJoined snapshot is set-up, not stream: counting starts after it.
  await Promise.all(followers.map((f) => f.joined))
  for (const f of followers) Object.assign(f.tally, { bytes: 0, frames: 0 })

  const prompt = JSON.stringify(
    AGENT === 'mock'
      ? { script: [{ stream: { kind: 'message', count: ITEMS } }] }
      : ({ count: ITEMS, group: ITEMS_PER_CHUNK, seconds: STREAM_SECONDS } satisfies StreamPrompt),
  )
  sampleStart()
  const started = performance.now()
  await graphql(url, `mutation($i: AddMessageInput!) { addMessage(input: $i) { replayed } }`, {
    i: { taskId: task.id, sessionId: session.id, clientMessageId: randomUUID(), content: prompt },
  })
  const done = (f: (typeof followers)[number]) => f.state.failure || (f.state.turnCompleted && f.streamed(expected.length))
  // Polled, not timed: a bench waits for an outcome, and a stream this long makes 50 ms moot.
  while (!followers.every(done)) await new Promise((r) => setTimeout(r, 50))
  // Whatever the server still sends about this stream (a final status, a trailing update) counts:
  // settled once every socket has been quiet for a second.
  const lastFrame = () => Math.max(...followers.map((f) => f.tally.lastFrameAt))
  do {
    await Promise.all(followers.map((f) => f.settled()))
    await new Promise((r) => setTimeout(r, 250))
  } while (performance.now() - lastFrame() < 1000)
  const seconds = (lastFrame() - started) / 1000
  const sampled = await heap()
  for (const f of followers) if (f.state.failure) throw f.state.failure

  const stored = await graphql<{ session: { messages: { id: string; content: string; author: string; status: string | null }[] } }>(
    url,
    `query($id: ID!) { session(id: $id) { messages(last: 10) { id content author status } } }`,
    { id: session.id },
  )
  const agent = stored.session.messages.filter((m) => m.author === 'AGENT')
  if (agent.length !== 1) throw new Error(`expected one agent message, found ${agent.length}`)
  const results = await Promise.all(followers.map((f) => f.finish(agent[0]!, expected)))
  return { seconds, heap: sampled, results, size: expected.length }
}

async function runClient() {
  const { child, reply } = forkServer<FromServer>(fileURLToPath(import.meta.url))
  const { url } = (await reply()) as Extract<FromServer, { type: 'ready' }>
  const sampleStart = () => child.send({ type: 'sample-start' } satisfies ToServer)
  const heap = async () => {
    child.send({ type: 'sample-stop' } satisfies ToServer)
    return (await reply()) as HeapReport
  }
  try {
    let expected = ''
    for (let i = 0; i < ITEMS; i++) expected += `${i};`
    const { workspace } = await graphql<{ workspace: { id: string } }>(url, `mutation { workspace: createWorkspace(name: "bench") { id } }`)
    // Bytes side by side on one stream; heap with both followers and, on a second stream, with
    // the append follower alone (what the server keeps when nobody asks for whole content).
    const both = await streamOnce(url, workspace.id, expected, ['append', 'content'], heap, sampleStart)
    const alone = await streamOnce(url, workspace.id, expected, ['append'], heap, sampleStart)
    report(both, alone)
  } finally {
    child.send({ type: 'stop' } satisfies ToServer)
  }
}

function report(both: Phase, alone: Phase) {
  const size = both.size
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`
  const times = (bytes: number) => `${(bytes / size).toFixed(2)}×`
  const row = (cells: string[]) => console.info('  ' + cells.map((c, i) => c.padEnd([34, 12, 10, 8, 9, 9, 9, 7, 7, 12][i] ?? 0)).join('').trimEnd())
  const chunks = AGENT === 'mock' ? `${ITEMS} chunks from the mock agent` : `${Math.ceil(ITEMS / ITEMS_PER_CHUNK)} chunks paced over ${STREAM_SECONDS} s`
  console.info(`one agent message of ${mb(size)} (${size} B, ${chunks}), each follower on its own graphql-ws connection`)
  const phases: [string, Phase][] = [
    ['stream 1, both followers', both],
    ['stream 2, append follower alone', alone],
  ]
  for (const [name, phase] of phases) {
    const growth = phase.heap.peakLive - phase.heap.idle
    console.info(`${name}: ${phase.seconds.toFixed(1)} s`)
    row(['  follower selects', 'received', '× content', 'frames', 'updates', 'appends', 'refetch', 'stale', 'exact', 'final status'])
    for (const r of phase.results)
      row([
        r.mode === 'append' ? '  append { offset text }' : '  message { content } (baseline)',
        mb(r.bytes),
        times(r.bytes),
        String(r.frames),
        String(r.updates),
        String(r.appends),
        String(r.refetches),
        String(r.stale),
        r.exact ? 'yes' : 'NO',
        `${r.status} (stored ${r.storedStatus})`,
      ])
    console.info(`    server heap idle after GC (baseline) ${mb(phase.heap.idle)}; growth: peak of ${phase.heap.samples} samples after GC ${mb(growth)} = ${times(growth)} content,`)
    console.info(`    peak between GCs (garbage included) ${mb(phase.heap.peakRaw - phase.heap.idle)}, RSS ${mb(phase.heap.peakRss - phase.heap.idleRss)}`)
  }
  const append = both.results.find((r) => r.mode === 'append')!
  const content = both.results.find((r) => r.mode === 'content')!
  console.info(`bytes on stream 1, baseline / append: ${(content.bytes / append.bytes).toFixed(1)}×`)
  const growth = (phase: Phase) => phase.heap.peakLive - phase.heap.idle
  const checks: [string, boolean][] = [
    [`bytes to the append follower ${times(append.bytes)} content (target ≤ ${BYTES_TARGET}×; baseline ${times(content.bytes)})`, append.bytes <= BYTES_TARGET * size],
    [`server heap growth, append follower alone: ${times(growth(alone))} content (target ≤ ${HEAP_TARGET}×)`, growth(alone) <= HEAP_TARGET * size],
    [`server heap growth, both followers: ${times(growth(both))} content (target ≤ ${HEAP_TARGET}×)`, growth(both) <= HEAP_TARGET * size],
    ['every follower rebuilt content equal to session.messages byte for byte', [...both.results, ...alone.results].every((r) => r.exact)],
  ]
  for (const [what, ok] of checks) console.info(`${ok ? 'PASS' : 'FAIL'} ${what}`)
  if (checks.some(([, ok]) => !ok)) process.exitCode = 1
}

if (process.argv[2] === 'server') await runServer()
else await runClient()
