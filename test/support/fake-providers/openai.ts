// A local fake of the OpenAI Responses API as Codex (inside @zed-industries/codex-acp) calls it:
// POST {base_url}/responses with `stream: true`, answered with server-sent events in the shapes
// codex-rs parses (codex-api/src/sse/responses.rs): response.created, response.output_item.added,
// response.output_text.delta, response.output_item.done, response.completed with usage. Tool calls
// are output items: exec_command is a `function_call` (arguments: a JSON string), apply_patch a
// freeform `custom_tool_call` (input: the patch text); their results come back as
// `function_call_output` / `custom_tool_call_output` items in the next request's input.
//
// Replies are scripted: each main-conversation request (turn metadata request_kind "turn" or none)
// takes the next reply from the queue; auxiliary requests (compaction, memory, prewarm, /models…)
// are answered harmlessly without consuming one. When the queue is empty a main request gets a
// short fixed text, and counts in `unscripted`. Nothing here logs message content.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** One output item of a streamed reply. */
export type OutputSpec =
  /** An assistant message, streamed as these deltas (joined, they are the message's text). */
  | { type: 'text'; deltas: string[] }
  /** A reasoning summary (an agent_thought_chunk over ACP), streamed as these deltas. */
  | { type: 'reasoning'; deltas: string[] }
  /** A function tool call, e.g. exec_command with { cmd }. */
  | { type: 'function_call'; name: string; arguments: Record<string, unknown>; callId?: string }
  /** A freeform tool call, e.g. apply_patch with the patch as input. */
  | { type: 'custom_tool_call'; name: string; input: string; callId?: string }

export interface Usage {
  input_tokens: number
  output_tokens: number
  total_tokens: number
}

export type ScriptedReply =
  | {
      type: 'stream'
      output: OutputSpec[]
      /** Pause before each text/reasoning delta (and before each item), in ms. 0: written at once. */
      delayMs?: number
      usage?: Usage
      /**
       * complete: response.completed, then the body ends. hang: stop after the output, never
       * completing (a test stops the turn; the fake notices the disconnect). failed: a
       * response.failed event with `error`, then the body ends. drop: the fake cuts the connection
       * after the output (codex: "stream disconnected before completion").
       */
      end?: 'complete' | 'hang' | 'failed' | 'drop'
      error?: { code?: string; message: string }
    }
  | { type: 'http_error'; status: number; headers?: Record<string, string>; body: unknown }

export interface RecordedRequest {
  method: string
  path: string
  /** Headers without authorization. */
  headers: Record<string, string | string[] | undefined>
  /** The bearer token sent matched the fake's apiKey (always true when none was set). */
  authorized: boolean
  /** Parsed JSON body (undefined when not JSON). Kept for assertions; never logged. */
  body: unknown
  /** main: a conversation turn that consumed (or wanted) a scripted reply; auxiliary otherwise. */
  kind: 'main' | 'auxiliary'
  /** request_kind from codex's x-codex-turn-metadata header, when present. */
  requestKind?: string
  /** Index of the scripted reply it consumed (main requests); undefined when unscripted. */
  replyIndex?: number
  /** The client went away before the reply ended (a cancelled turn, a killed agent). */
  disconnected: boolean
  /** The reply was written to its end. */
  finished: boolean
}

export interface FakeOpenAi {
  /** base_url for codex's model provider: ends in /v1 (requests go to /v1/responses). */
  url: string
  requests: RecordedRequest[]
  /** Main requests that found no scripted reply (answered with a short fixed text). */
  unscripted: number
  /** Queue replies for the next main-conversation requests, in order. */
  script(...replies: ScriptedReply[]): void
  /** Replies still queued. */
  pending(): number
  /** Resolves with the nth (0-based) main request once it has arrived. */
  waitForMainRequest(index: number, timeoutMs?: number): Promise<RecordedRequest>
  /** Resolves once that request's client has disconnected before its reply ended. */
  waitForDisconnect(request: RecordedRequest, timeoutMs?: number): Promise<void>
  mainRequests(): RecordedRequest[]
  close(): Promise<void>
}

// --- reply builders ---

/** Splits text into about `parts` deltas on code point boundaries (never inside a surrogate pair). */
export function splitText(text: string, parts: number): string[] {
  const points = Array.from(text)
  const size = Math.max(1, Math.ceil(points.length / Math.max(1, parts)))
  const deltas: string[] = []
  for (let i = 0; i < points.length; i += size) deltas.push(points.slice(i, i + size).join(''))
  return deltas.length > 0 ? deltas : ['']
}

let callCounter = 0
const nextCallId = () => `call_fake_${++callCounter}`

export const reply = {
  /** A streamed assistant message; `deltas` is a count of parts (default: one per ~4 code points) or the parts themselves. */
  text(text: string, options: { deltas?: number | string[]; delayMs?: number; usage?: Usage } = {}): ScriptedReply {
    const deltas = Array.isArray(options.deltas) ? options.deltas : splitText(text, options.deltas ?? Math.ceil(Array.from(text).length / 4))
    return { type: 'stream', output: [{ type: 'text', deltas }], delayMs: options.delayMs, usage: options.usage }
  },
  /** A shell command through codex's exec_command tool (asks permission under approval_policy "untrusted"). */
  exec(cmd: string, options: { callId?: string; text?: string; workdir?: string } = {}): ScriptedReply {
    const output: OutputSpec[] = options.text ? [{ type: 'text', deltas: splitText(options.text, 2) }] : []
    output.push({ type: 'function_call', name: 'exec_command', arguments: { cmd, ...(options.workdir && { workdir: options.workdir }) }, callId: options.callId })
    return { type: 'stream', output }
  },
  /** A file edit through codex's freeform apply_patch tool; `patch` is "*** Begin Patch … *** End Patch". */
  applyPatch(patch: string, options: { callId?: string; text?: string } = {}): ScriptedReply {
    const output: OutputSpec[] = options.text ? [{ type: 'text', deltas: splitText(options.text, 2) }] : []
    output.push({ type: 'custom_tool_call', name: 'apply_patch', input: patch, callId: options.callId })
    return { type: 'stream', output }
  },
  /** Plan entries through codex's update_plan tool (a `plan` session update over ACP). */
  plan(steps: { step: string; status: 'pending' | 'in_progress' | 'completed' }[], options: { callId?: string } = {}): ScriptedReply {
    return { type: 'stream', output: [{ type: 'function_call', name: 'update_plan', arguments: { plan: steps }, callId: options.callId }] }
  },
  /** Text streamed slowly and never completed: a test cancels the turn or stops the agent mid-way. */
  slow(text: string, options: { delayMs?: number; deltas?: number } = {}): ScriptedReply {
    return { type: 'stream', output: [{ type: 'text', deltas: splitText(text, options.deltas ?? Array.from(text).length) }], delayMs: options.delayMs ?? 200, end: 'hang' }
  },
  /** Some text, then the fake cuts the connection before response.completed. */
  dropped(text: string): ScriptedReply {
    return { type: 'stream', output: [{ type: 'text', deltas: splitText(text, 4) }], end: 'drop' }
  },
  /** Some text, then a response.failed event (codex fails the turn with the event's message). */
  failed(text: string, message = 'The response failed.', code = 'server_error'): ScriptedReply {
    return { type: 'stream', output: [{ type: 'text', deltas: splitText(text, 2) }], end: 'failed', error: { code, message } }
  },
  /** 401 as OpenAI answers a bad key. */
  unauthorized(): ScriptedReply {
    return errorReply(401, {}, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key')
  },
  /** 429 with retry-after (seconds). */
  rateLimited(retryAfterSeconds = 1): ScriptedReply {
    return errorReply(
      429,
      { 'retry-after': String(retryAfterSeconds), 'retry-after-ms': String(retryAfterSeconds * 1000) },
      `Rate limit reached. Please try again in ${retryAfterSeconds}s.`,
      'requests',
      'rate_limit_exceeded',
    )
  },
  /** 503 or 529 overloaded. */
  overloaded(status: 503 | 529 = 503): ScriptedReply {
    return errorReply(status, {}, 'The server is overloaded. Please try again later.', 'server_error', 'server_overloaded')
  },
  /** Any HTTP error status with an OpenAI-shaped body. */
  httpError(status: number, message: string, options: { headers?: Record<string, string>; type?: string; code?: string } = {}): ScriptedReply {
    return errorReply(status, options.headers ?? {}, message, options.type ?? 'server_error', options.code ?? null)
  },
}

function errorReply(status: number, headers: Record<string, string>, message: string, type: string, code: string | null): ScriptedReply {
  return { type: 'http_error', status, headers, body: { error: { message, type, param: null, code } } }
}

// --- server ---

const AUX_REPLY: ScriptedReply = { type: 'stream', output: [{ type: 'text', deltas: ['ok'] }] }
const UNSCRIPTED_REPLY: ScriptedReply = { type: 'stream', output: [{ type: 'text', deltas: ['(no scripted reply)'] }] }
const MAIN_REQUEST_KINDS = new Set(['turn', 'review'])

export async function startFakeOpenAi(options: { apiKey?: string } = {}): Promise<FakeOpenAi> {
  const queue: { reply: ScriptedReply; index: number }[] = []
  let scripted = 0
  const requests: RecordedRequest[] = []
  const waiters = new Set<() => void>()
  const sockets = new Set<Socket>()
  const notify = () => {
    for (const waiter of [...waiters]) waiter()
  }

  const fake: FakeOpenAi = {
    url: '',
    requests,
    unscripted: 0,
    script(...replies) {
      for (const r of replies) queue.push({ reply: r, index: scripted++ })
    },
    pending: () => queue.length,
    mainRequests: () => requests.filter((r) => r.kind === 'main'),
    waitForMainRequest: (index, timeoutMs = 30_000) =>
      waitFor(() => fake.mainRequests()[index], timeoutMs, `main request #${index}`),
    waitForDisconnect: (request, timeoutMs = 30_000) =>
      waitFor(() => (request.disconnected ? true : undefined), timeoutMs, 'disconnect').then(() => undefined),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }

  function waitFor<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const value = probe()
        if (value === undefined) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve(value)
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`fake OpenAI: timed out after ${timeoutMs} ms waiting for ${what}`))
      }, timeoutMs)
      waiters.add(check)
      check()
    })
  }

  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => void handle(req, res, Buffer.concat(parts)))
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })

  async function handle(req: IncomingMessage, res: ServerResponse, raw: Buffer) {
    const path = (req.url ?? '/').split('?')[0]!
    const { authorization, ...headers } = req.headers
    let body: unknown
    try {
      body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined
    } catch {
      body = undefined
    }
    const requestKind = turnRequestKind(req.headers['x-codex-turn-metadata'])
    const isResponses = req.method === 'POST' && path.endsWith('/responses')
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      headers,
      authorized: options.apiKey === undefined || authorization === `Bearer ${options.apiKey}`,
      body,
      kind: isResponses && (requestKind === undefined || MAIN_REQUEST_KINDS.has(requestKind)) ? 'main' : 'auxiliary',
      requestKind,
      disconnected: false,
      finished: false,
    }
    requests.push(record)
    res.on('close', () => {
      if (!res.writableFinished && !record.finished) {
        record.disconnected = true
        notify()
      }
    })
    notify()

    if (!record.authorized) return send(res, record, reply.unauthorized())
    if (!isResponses) return answerAuxiliary(res, record, path)
    if (record.kind === 'auxiliary') return send(res, record, AUX_REPLY)
    const next = queue.shift()
    if (next) record.replyIndex = next.index
    else fake.unscripted++
    return send(res, record, next?.reply ?? UNSCRIPTED_REPLY)
  }

  function answerAuxiliary(res: ServerResponse, record: RecordedRequest, path: string) {
    if (record.method === 'GET' && path.endsWith('/models')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ models: [] }))
    } else if (record.method === 'POST' && path.endsWith('/responses/compact')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ output: [] }))
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }))
    }
    record.finished = true
  }

  async function send(res: ServerResponse, record: RecordedRequest, scriptedReply: ScriptedReply) {
    if (scriptedReply.type === 'http_error') {
      res.writeHead(scriptedReply.status, { 'content-type': 'application/json', ...scriptedReply.headers }).end(JSON.stringify(scriptedReply.body))
      record.finished = true
      return
    }
    await stream(res, scriptedReply)
    if (scriptedReply.end === 'drop') {
      record.finished = true
      res.destroy()
    } else if (!res.destroyed && scriptedReply.end !== 'hang') {
      res.end()
      record.finished = true
    }
    notify()
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  return fake
}

function turnRequestKind(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined
  try {
    const kind = (JSON.parse(header) as { request_kind?: unknown }).request_kind
    return typeof kind === 'string' ? kind : undefined
  } catch {
    return undefined
  }
}

let responseCounter = 0

/** Writes one reply as server-sent events; stops early when the client goes away. */
async function stream(res: ServerResponse, r: Extract<ScriptedReply, { type: 'stream' }>) {
  const responseId = `resp_fake_${++responseCounter}`
  const delayMs = r.delayMs ?? 0
  let sequence = 0
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  const alive = () => !res.destroyed && !res.writableEnded
  const event = (data: Record<string, unknown>) => {
    if (alive()) res.write(`event: ${String(data.type)}\ndata: ${JSON.stringify({ ...data, sequence_number: sequence++ })}\n\n`)
  }
  const pause = () => (delayMs > 0 && alive() ? new Promise<void>((resolve) => setTimeout(resolve, delayMs)) : Promise.resolve())
  const shell = { id: responseId, object: 'response', created_at: Math.floor(Date.now() / 1000), status: 'in_progress', model: 'fake', output: [] }

  event({ type: 'response.created', response: shell })
  event({ type: 'response.in_progress', response: shell })
  const done: unknown[] = []
  let outputChars = 0
  for (const [outputIndex, spec] of r.output.entries()) {
    if (!alive()) return
    await pause()
    const itemId = `${spec.type === 'text' ? 'msg' : spec.type === 'reasoning' ? 'rs' : 'fc'}_fake_${responseCounter}_${outputIndex}`
    if (spec.type === 'text') {
      const text = spec.deltas.join('')
      outputChars += text.length
      event({ type: 'response.output_item.added', output_index: outputIndex, item: { id: itemId, type: 'message', status: 'in_progress', role: 'assistant', content: [] } })
      event({ type: 'response.content_part.added', item_id: itemId, output_index: outputIndex, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } })
      for (const delta of spec.deltas) {
        await pause()
        if (!alive()) return
        event({ type: 'response.output_text.delta', item_id: itemId, output_index: outputIndex, content_index: 0, delta })
      }
      if (r.end === 'hang' || r.end === 'drop') return
      event({ type: 'response.output_text.done', item_id: itemId, output_index: outputIndex, content_index: 0, text })
      event({ type: 'response.content_part.done', item_id: itemId, output_index: outputIndex, content_index: 0, part: { type: 'output_text', text, annotations: [] } })
      const item = { id: itemId, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }
      event({ type: 'response.output_item.done', output_index: outputIndex, item })
      done.push(item)
    } else if (spec.type === 'reasoning') {
      const text = spec.deltas.join('')
      event({ type: 'response.output_item.added', output_index: outputIndex, item: { id: itemId, type: 'reasoning', summary: [] } })
      event({ type: 'response.reasoning_summary_part.added', item_id: itemId, output_index: outputIndex, summary_index: 0, part: { type: 'summary_text', text: '' } })
      for (const delta of spec.deltas) {
        await pause()
        if (!alive()) return
        event({ type: 'response.reasoning_summary_text.delta', item_id: itemId, output_index: outputIndex, summary_index: 0, delta })
      }
      event({ type: 'response.reasoning_summary_text.done', item_id: itemId, output_index: outputIndex, summary_index: 0, text })
      const item = { id: itemId, type: 'reasoning', summary: [{ type: 'summary_text', text }] }
      event({ type: 'response.output_item.done', output_index: outputIndex, item })
      done.push(item)
    } else if (spec.type === 'function_call') {
      const callId = spec.callId ?? nextCallId()
      const args = JSON.stringify(spec.arguments)
      event({ type: 'response.output_item.added', output_index: outputIndex, item: { id: itemId, type: 'function_call', status: 'in_progress', name: spec.name, arguments: '', call_id: callId } })
      event({ type: 'response.function_call_arguments.delta', item_id: itemId, output_index: outputIndex, delta: args })
      event({ type: 'response.function_call_arguments.done', item_id: itemId, output_index: outputIndex, arguments: args })
      const item = { id: itemId, type: 'function_call', status: 'completed', name: spec.name, arguments: args, call_id: callId }
      event({ type: 'response.output_item.done', output_index: outputIndex, item })
      done.push(item)
    } else {
      const callId = spec.callId ?? nextCallId()
      event({ type: 'response.output_item.added', output_index: outputIndex, item: { id: itemId, type: 'custom_tool_call', status: 'in_progress', name: spec.name, input: '', call_id: callId } })
      event({ type: 'response.custom_tool_call_input.delta', item_id: itemId, output_index: outputIndex, delta: spec.input })
      event({ type: 'response.custom_tool_call_input.done', item_id: itemId, output_index: outputIndex, input: spec.input })
      const item = { id: itemId, type: 'custom_tool_call', status: 'completed', name: spec.name, input: spec.input, call_id: callId }
      event({ type: 'response.output_item.done', output_index: outputIndex, item })
      done.push(item)
    }
  }
  if (r.end === 'hang' || r.end === 'drop') return
  if (r.end === 'failed') {
    event({ type: 'response.failed', response: { ...shell, status: 'failed', error: { code: r.error?.code ?? 'server_error', message: r.error?.message ?? 'The response failed.' } } })
    return
  }
  const outputTokens = Math.max(1, Math.ceil(outputChars / 4))
  const usage = r.usage ?? { input_tokens: 100, output_tokens: outputTokens, total_tokens: 100 + outputTokens }
  event({
    type: 'response.completed',
    response: {
      ...shell,
      status: 'completed',
      output: done,
      usage: {
        input_tokens: usage.input_tokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: usage.output_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.total_tokens,
      },
    },
  })
}
