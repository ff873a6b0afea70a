// A local fake of the Anthropic Messages API, for running the real Claude Code ACP adapter
// (@zed-industries/claude-agent-acp, which drives the bundled Claude Code CLI) fully offline.
//
// What the CLI (2.1.83, in @anthropic-ai/claude-agent-sdk 0.2.83) was seen to call:
//   HEAD /                            a connectivity probe at session start (answered 200, empty)
//   POST /v1/messages?beta=true       every model call, stream: true for the conversation
// and, not seen in practice but answered in case: POST /v1/messages/count_tokens (an estimate).
// Anything else is recorded and answered 404 with Anthropic's not_found_error body, so a test can
// see (in `requests`) when a new CLI version starts calling something new.
//
// Replies to the MAIN conversation (the model calls that carry the agent's tools) are scripted by
// the test; every other model call the CLI makes on its own (small-model helpers such as a Bash
// command-prefix check or a title, made without tools) is AUXILIARY: answered with a short
// harmless text and never consumes a scripted reply. See `classify`.
//
// Streams are written exactly in Anthropic's server-sent-event framing: message_start,
// content_block_start, ping, content_block_delta (text_delta / input_json_delta / thinking_delta /
// signature_delta), content_block_stop, message_delta (stop_reason, usage), message_stop.
//
// Message content is recorded in memory for assertions and never logged.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

// --- Scripted replies ---

export type ContentSpec =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'tool_use'; name: string; input: Record<string, unknown>; id?: string }

export interface MessageReply {
  kind: 'message'
  content: ContentSpec[]
  /** Defaults to 'tool_use' when the content has a tool_use block, else 'end_turn'. */
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal'
  /**
   * How the streamed text/thinking/tool JSON is cut into deltas: a number of code points per
   * delta, or a list of sizes used in turn (cycled), so a test can make boundaries fall right
   * beside multi-byte characters. Cutting is done on code points, never inside a surrogate pair.
   */
  chunkSize?: number | number[]
  /** Pause between deltas (a slow stream a test can interrupt). */
  delayMs?: number
  /** After this many deltas, end the stream with an SSE `error` event (a mid-stream failure). */
  failAfterDeltas?: { deltas: number; errorType?: string; message?: string }
  model?: string
}

export interface ErrorReply {
  kind: 'error'
  status: number
  /** Anthropic's error.type, e.g. authentication_error. */
  type: string
  message: string
  headers?: Record<string, string>
}

/** A reply, or a function choosing one from the request (called when the request arrives). */
export type Reply = MessageReply | ErrorReply | ((request: RecordedRequest) => MessageReply | ErrorReply)

type ReplyOptions = Pick<MessageReply, 'chunkSize' | 'delayMs' | 'failAfterDeltas' | 'stopReason'>

/** A plain text answer (ends the turn). */
export function textReply(text: string, options: ReplyOptions & { thinking?: string } = {}): MessageReply {
  const { thinking, ...rest } = options
  return { kind: 'message', content: [...(thinking ? [{ type: 'thinking' as const, thinking }] : []), { type: 'text', text }], ...rest }
}

/** A tool call (stop_reason tool_use), optionally preceded by some text, as the model does. */
export function toolUseReply(name: string, input: Record<string, unknown>, options: ReplyOptions & { text?: string; id?: string } = {}): MessageReply {
  const { text, id, ...rest } = options
  return {
    kind: 'message',
    content: [...(text ? [{ type: 'text' as const, text }] : []), { type: 'tool_use', name, input, ...(id && { id }) }],
    ...rest,
  }
}

/** Any Anthropic API error, with its JSON body exactly as the API sends it. */
export function errorReply(status: number, type: string, message: string, headers: Record<string, string> = {}): ErrorReply {
  return { kind: 'error', status, type, message, headers }
}

/** HTTP 401, as the API answers an invalid x-api-key. */
export const authenticationError = (): ErrorReply => errorReply(401, 'authentication_error', 'invalid x-api-key')

/** HTTP 429 with a retry-after header (seconds) and the rate-limit headers the API sends along. */
export const rateLimitError = (retryAfterSeconds = 1): ErrorReply =>
  errorReply(
    429,
    'rate_limit_error',
    'This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.',
    {
      'retry-after': String(retryAfterSeconds),
      'x-should-retry': 'true',
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': new Date(Date.now() + retryAfterSeconds * 1000).toISOString(),
    },
  )

/** HTTP 529, the API being overloaded. */
export const overloadedError = (): ErrorReply => errorReply(529, 'overloaded_error', 'Overloaded', { 'x-should-retry': 'true' })

// --- Recorded requests ---

export type RequestKind = 'main' | 'auxiliary' | 'count_tokens' | 'probe' | 'other'

export interface RecordedRequest {
  seq: number
  method: string
  /** Path and query, e.g. /v1/messages?beta=true. */
  url: string
  kind: RequestKind
  /** Request headers, x-api-key and authorization replaced by '<redacted>' when present. */
  headers: Record<string, string | string[] | undefined>
  /** The parsed JSON body ({} when none). */
  body: Record<string, unknown>
  model?: string
  stream: boolean
  /** The conversation the model was sent (so a test can check a resumed session's history). */
  messages: AnthropicMessage[]
  /** The system prompt, its text blocks joined with '\n'. */
  system: string
  toolNames: string[]
  /** The newest user-typed text (system-reminder blocks and tool results skipped). */
  userText: string
  /** Status answered; undefined until the answer starts. */
  status?: number
  /** True when a main request found nothing scripted and got the fallback reply. */
  unscripted: boolean
  /** The client went away before the answer was complete (e.g. the turn was cancelled). */
  disconnected: boolean
  /** Settles when the answer is complete or the client disconnected. */
  settled: Promise<'completed' | 'disconnected'>
}

export interface AnthropicMessage {
  role: 'user' | 'assistant'
  content: string | Array<{ type: string; text?: string; [key: string]: unknown }>
}

/**
 * Tells the conversation's own calls from the CLI's helper calls. The main loop always sends the
 * agent's tool definitions (Bash, Edit, Read...); the helpers the CLI makes on its own (small fast
 * model: command-prefix checks, titles, summaries) send none. A subagent's calls carry tools too
 * and so count as main, which is what a test scripting a Task tool wants.
 */
export function classify(method: string, url: string, body: Record<string, unknown>): RequestKind {
  const path = url.split('?')[0]
  if (method === 'HEAD' || (method === 'GET' && path === '/')) return 'probe'
  if (method !== 'POST') return 'other'
  if (path === '/v1/messages/count_tokens') return 'count_tokens'
  if (path !== '/v1/messages') return 'other'
  if (!Array.isArray(body.tools) || body.tools.length === 0) return 'auxiliary'
  // Compaction is sent with the main tools (to share the prompt cache) but is the CLI's own call.
  const messages = Array.isArray(body.messages) ? (body.messages as AnthropicMessage[]) : []
  if (COMPACTION.test(newestUserText(messages))) return 'auxiliary'
  return 'main'
}

/** The instruction the CLI sends when it compacts the conversation (full or partial). */
const COMPACTION = /Your task is to create a detailed summary of the/

// --- The fake ---

export interface FakeAnthropic {
  /** Base URL, as ANTHROPIC_BASE_URL. */
  url: string
  /** Every request received, in arrival order. */
  requests: RecordedRequest[]
  /** Queues replies for the next main requests, in order (after any marker-selected ones). */
  script(...replies: Reply[]): void
  /**
   * Queues replies for main requests whose newest user text contains `marker`; these are chosen
   * before the plain script. A tool round trip keeps the same user text (the tool result is not
   * user text), so `when('M', toolUseReply(...), textReply('done'))` scripts a whole turn.
   */
  when(marker: string, ...replies: Reply[]): void
  /** Replies not consumed yet (plain script plus marker queues). */
  pending(): number
  /** The main-conversation requests only. */
  mainRequests(): RecordedRequest[]
  /** Resolves with the first request (already received or future) matching, or rejects after timeoutMs. */
  waitForRequest(predicate: (request: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>
  close(): Promise<void>
}

export interface FakeAnthropicOptions {
  /** Answer to a main request when nothing is scripted (default: a short text). */
  fallback?: Reply
  /** The text auxiliary requests get (default 'OK'). */
  auxiliaryText?: string
}

export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const requests: RecordedRequest[] = []
  const queue: Reply[] = []
  const byMarker: Array<{ marker: string; replies: Reply[] }> = []
  const waiters = new Set<{ predicate: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }>()
  const fallback: Reply = options.fallback ?? textReply('(fake anthropic: no scripted reply)')
  const auxiliary = textReply(options.auxiliaryText ?? 'OK')

  function nextMainReply(request: RecordedRequest): Reply | undefined {
    const rule = byMarker.find((r) => r.replies.length > 0 && request.userText.includes(r.marker))
    return rule ? rule.replies.shift() : queue.shift()
  }

  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      void handle(req, res, Buffer.concat(parts)).catch(() => {
        // A bug in a reply function or a write after the client left: end the answer, never crash the test.
        if (!res.headersSent) res.writeHead(500)
        res.end()
      })
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> {
    let body: Record<string, unknown> = {}
    try {
      if (raw.length > 0) body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>
    } catch {
      // Left empty: a non-JSON body is recorded as {} and classified by method and path alone.
    }
    const method = req.method ?? 'GET'
    const url = req.url ?? '/'
    const messages = Array.isArray(body.messages) ? (body.messages as AnthropicMessage[]) : []
    let settle!: (how: 'completed' | 'disconnected') => void
    const request: RecordedRequest = {
      seq: requests.length,
      method,
      url,
      kind: classify(method, url, body),
      headers: redact(req.headers),
      body,
      model: typeof body.model === 'string' ? body.model : undefined,
      stream: body.stream === true,
      messages,
      system: systemText(body.system),
      toolNames: Array.isArray(body.tools) ? (body.tools as Array<{ name?: string }>).map((t) => String(t.name)) : [],
      userText: newestUserText(messages),
      unscripted: false,
      disconnected: false,
      settled: new Promise((resolve) => (settle = resolve)),
    }
    requests.push(request)
    // A response 'close' before it finished means the client went away (cancel, abort, kill).
    res.once('close', () => {
      if (!res.writableFinished) request.disconnected = true
      settle(request.disconnected ? 'disconnected' : 'completed')
    })
    for (const waiter of waiters) {
      if (waiter.predicate(request)) {
        waiters.delete(waiter)
        waiter.resolve(request)
      }
    }

    switch (request.kind) {
      case 'probe':
        request.status = 200
        res.writeHead(200).end()
        return
      case 'count_tokens':
        request.status = 200
        sendJson(res, 200, { input_tokens: estimateTokens(raw.length) })
        return
      case 'other':
        request.status = 404
        sendJson(res, 404, errorBody('not_found_error', 'Not found'))
        return
      case 'auxiliary':
      case 'main': {
        let reply: Reply | undefined = request.kind === 'main' ? nextMainReply(request) : auxiliary
        if (reply === undefined) {
          request.unscripted = true
          reply = fallback
        }
        const resolved = typeof reply === 'function' ? reply(request) : reply
        if (resolved.kind === 'error') {
          request.status = resolved.status
          sendJson(res, resolved.status, errorBody(resolved.type, resolved.message), resolved.headers)
          return
        }
        request.status = 200
        const model = resolved.model ?? request.model ?? 'claude-sonnet-4-6'
        if (request.stream) await stream(res, resolved, model, estimateTokens(raw.length))
        else sendJson(res, 200, wholeMessage(resolved, model, estimateTokens(raw.length)))
        return
      }
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (...replies) => void queue.push(...replies),
    when(marker, ...replies) {
      const rule = byMarker.find((r) => r.marker === marker)
      if (rule) rule.replies.push(...replies)
      else byMarker.push({ marker, replies })
    },
    pending: () => queue.length + byMarker.reduce((n, r) => n + r.replies.length, 0),
    mainRequests: () => requests.filter((r) => r.kind === 'main'),
    waitForRequest(predicate, timeoutMs = 30_000) {
      const found = requests.find(predicate)
      if (found) return Promise.resolve(found)
      return new Promise((resolve, reject) => {
        const waiter = {
          predicate,
          resolve: (r: RecordedRequest) => {
            clearTimeout(timer)
            resolve(r)
          },
        }
        const timer = setTimeout(() => {
          waiters.delete(waiter)
          reject(new Error(`fake anthropic: no matching request within ${timeoutMs} ms (${requests.length} received)`))
        }, timeoutMs)
        waiters.add(waiter)
      })
    },
    close: () =>
      new Promise<void>((resolve) => {
        // Open streams (a slow reply nobody stopped) would keep close() waiting forever.
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

// --- Wire format ---

/** Ids shaped like the API's: a prefix and base62 characters. */
function base62(length: number): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
  return Array.from(randomBytes(length), (byte) => alphabet[byte % 62]).join('')
}
const requestId = () => `req_011${base62(21)}`
const messageId = () => `msg_01${base62(22)}`
const toolUseId = () => `toolu_01${base62(22)}`

/** Anthropic's error body: {"type":"error","error":{"type","message"},"request_id"}. */
function errorBody(type: string, message: string) {
  return { type: 'error', error: { type, message }, request_id: requestId() }
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    'request-id': (value as { request_id?: string }).request_id ?? requestId(),
    ...headers,
  })
  res.end(text)
}

/** A rough token count (about 4 bytes a token, capped at 2000): plausible, never near the context window. */
const estimateTokens = (bytes: number) => Math.min(2000, Math.max(1, Math.ceil(bytes / 4)))

/**
 * Usage as the API reports it. The numbers are kept small on purpose: the CLI adds them up to
 * judge how full the context window is, and realistic counts for a 1 MB answer (~350k tokens)
 * make it compact the conversation on the next turn, which would eat a scripted reply.
 */
const usage = (input: number, output: number) => ({
  input_tokens: input,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: output,
  service_tier: 'standard',
})

const stopReasonOf = (reply: MessageReply) => reply.stopReason ?? (reply.content.some((c) => c.type === 'tool_use') ? 'tool_use' : 'end_turn')

/** Tool ids are fixed once per reply so the streamed and the non-streamed forms agree. */
function withIds(reply: MessageReply): ContentSpec[] {
  return reply.content.map((c) => (c.type === 'tool_use' ? { ...c, id: c.id ?? toolUseId() } : c))
}

const outputTokens = (content: ContentSpec[]) =>
  estimateTokens(content.reduce((n, c) => n + Buffer.byteLength(c.type === 'text' ? c.text : c.type === 'thinking' ? c.thinking : JSON.stringify(c.input)), 0))

function wholeMessage(reply: MessageReply, model: string, inputTokens: number) {
  const content = withIds(reply).map((c) =>
    c.type === 'thinking' ? { type: 'thinking', thinking: c.thinking, signature: c.signature ?? fakeSignature() } : c,
  )
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReasonOf(reply),
    stop_sequence: null,
    usage: usage(inputTokens, outputTokens(reply.content)),
  }
}

const fakeSignature = () => randomBytes(48).toString('base64')

/**
 * Cuts text into pieces of `sizes` code points (cycled). Working on code points (Array.from)
 * means a surrogate pair (😀) is never split, and the pieces are JS strings, so a multi-byte
 * UTF-8 character is only ever encoded whole inside one SSE event.
 */
export function splitText(text: string, sizes: number | number[] = 16): string[] {
  const list = (Array.isArray(sizes) ? sizes : [sizes]).map((n) => Math.max(1, Math.floor(n)))
  const points = Array.from(text)
  const pieces: string[] = []
  for (let at = 0, i = 0; at < points.length; i++) {
    const size = list[i % list.length]!
    pieces.push(points.slice(at, at + size).join(''))
    at += size
  }
  return pieces
}

/**
 * Writes one SSE event; when the write is refused, waits until the response has flushed, so a
 * 1 MB answer does not pile up in memory. 'drain' alone is not enough: under Node 24.22 it was seen
 * lost (writableNeedDrain still true, nothing buffered on the response or its socket, no 'drain'
 * ever: nodejs/node#62936, cf. #64680), which left a 1 MiB answer stuck at ~75–95 % until the CLI
 * gave up. So the wait also ends once nothing is left to flush, checked every 20 ms.
 */
async function writeEvent(res: ServerResponse, data: { type: string } & Record<string, unknown>): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false
  if (!res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`)) {
    await new Promise<void>((resolve) => {
      const flushed = () => res.writableLength === 0 && (res.socket?.writableLength ?? 0) === 0
      const watch = setInterval(() => flushed() && done(), 20)
      const done = () => {
        clearInterval(watch)
        res.off('drain', done)
        res.off('close', done)
        resolve()
      }
      res.on('drain', done)
      res.on('close', done)
    })
  }
  return !res.destroyed
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function stream(res: ServerResponse, reply: MessageReply, model: string, inputTokens: number): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': requestId(),
  })
  const content = withIds(reply)
  let deltas = 0
  // Every delta goes through here: the pause of a slow stream, the mid-stream failure, and the
  // stop when the client has gone (false: stop writing).
  const delta = async (index: number, body: Record<string, unknown>): Promise<boolean> => {
    if (reply.failAfterDeltas && deltas >= reply.failAfterDeltas.deltas) {
      const { errorType = 'overloaded_error', message = 'Overloaded' } = reply.failAfterDeltas
      await writeEvent(res, { type: 'error', error: { type: errorType, message } })
      res.end()
      return false
    }
    if (reply.delayMs && deltas > 0) await sleep(reply.delayMs)
    deltas++
    return writeEvent(res, { type: 'content_block_delta', index, delta: body })
  }

  if (
    !(await writeEvent(res, {
      type: 'message_start',
      message: { id: messageId(), type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(inputTokens, 1) },
    }))
  )
    return
  for (const [index, block] of content.entries()) {
    const start =
      block.type === 'text'
        ? { type: 'text', text: '' }
        : block.type === 'thinking'
          ? { type: 'thinking', thinking: '', signature: '' }
          : { type: 'tool_use', id: block.id, name: block.name, input: {} }
    if (!(await writeEvent(res, { type: 'content_block_start', index, content_block: start }))) return
    // The API sends a ping early in every stream.
    if (index === 0 && !(await writeEvent(res, { type: 'ping' }))) return
    if (block.type === 'text') {
      for (const piece of splitText(block.text, reply.chunkSize)) if (!(await delta(index, { type: 'text_delta', text: piece }))) return
    } else if (block.type === 'thinking') {
      for (const piece of splitText(block.thinking, reply.chunkSize)) if (!(await delta(index, { type: 'thinking_delta', thinking: piece }))) return
      if (!(await delta(index, { type: 'signature_delta', signature: block.signature ?? fakeSignature() }))) return
    } else {
      // The API opens a tool's input with an empty partial_json, then streams the JSON text.
      if (!(await delta(index, { type: 'input_json_delta', partial_json: '' }))) return
      for (const piece of splitText(JSON.stringify(block.input), reply.chunkSize))
        if (!(await delta(index, { type: 'input_json_delta', partial_json: piece }))) return
    }
    if (!(await writeEvent(res, { type: 'content_block_stop', index }))) return
  }
  if (
    !(await writeEvent(res, {
      type: 'message_delta',
      delta: { stop_reason: stopReasonOf(reply), stop_sequence: null },
      usage: { output_tokens: outputTokens(reply.content) },
    }))
  )
    return
  if (!(await writeEvent(res, { type: 'message_stop' }))) return
  res.end()
}

// --- Request digests ---

function redact(headers: IncomingMessage['headers']): Record<string, string | string[] | undefined> {
  const copy: Record<string, string | string[] | undefined> = { ...headers }
  for (const name of ['x-api-key', 'authorization']) if (copy[name] !== undefined) copy[name] = '<redacted>'
  return copy
}

function systemText(system: unknown): string {
  if (typeof system === 'string') return system
  if (Array.isArray(system)) return system.map((b: { text?: unknown }) => (typeof b.text === 'string' ? b.text : '')).join('\n')
  return ''
}

/** Text blocks the CLI adds to user messages itself (context, local slash-command echoes). */
const CLI_ADDED = /^\s*<(system-reminder|local-command-caveat|local-command-stdout|local-command-stderr|command-name)>/

/**
 * The newest text the user typed: the CLI wraps context it adds in <system-reminder> blocks, echoes
 * local commands (the adapter's /model at session start) in <command-name>/<local-command-*>
 * blocks, and sends tool results as user messages; none of these is the user's prompt.
 */
export function newestUserText(messages: AnthropicMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role !== 'user') continue
    if (typeof message.content === 'string') {
      if (!CLI_ADDED.test(message.content)) return message.content
      continue
    }
    const texts = message.content
      .filter((b) => b.type === 'text' && typeof b.text === 'string' && !CLI_ADDED.test(b.text))
      .map((b) => b.text as string)
    if (texts.length > 0) return texts.join('\n')
  }
  return ''
}
