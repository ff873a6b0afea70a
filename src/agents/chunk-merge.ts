/**
 * Folds runs of adjacent text chunks of one message in an agent's output into one
 * session/update, before the ACP SDK reads the bytes. The SDK validates and dispatches each
 * message through several promise hops and two schema parses (its client app's session-update
 * router, which runs ahead of every registered handler, and the handler's own), several times
 * what decoding the line costs; per chunk, that was the ingest path's limit. It has no hook ahead
 * of that router, so it is fed differently: the SDK still frames, validates and dispatches all
 * the agent sent, in fewer messages. The coalescer concatenates adjacent chunks of a
 * message anyway, so handing it a run already joined changes no stored byte.
 *
 * Only lines of the exact plain shape are folded: a notification with `jsonrpc`, `method` and
 * `params` and nothing else, whose params are `sessionId` and an `agent_message_chunk` or
 * `agent_thought_chunk` update of non-empty text content with at most a `messageId` besides. A
 * run is one session, kind and messageId, within one read of the pipe: nothing waits for more
 * input. Every other line (another update, a request, a response, a line that does not parse)
 * passes through byte for byte (bytes that are not UTF-8 become U+FFFD, as the SDK's own
 * decoding makes them) and ends the run, so order is kept and the SDK still answers
 * whatever it must. The joined notification is an ordinary one (the SDK validates it like any
 * other) and says in `_meta` how many chunks it carries, so chunk counts stay exact.
 */

/** `_meta` key of a joined chunk notification: the number of agent chunks it carries. */
export const MERGED_CHUNKS_META = 'tss/mergedChunks'

const NEWLINE = 0x0a
type ChunkKind = 'agent_message_chunk' | 'agent_thought_chunk'

interface Chunk {
  sessionId: string
  kind: ChunkKind
  messageId: string | null | undefined
  text: string
}

interface Run extends Chunk {
  line: string
  texts: string[]
  /** Set when the run's first line is the chunk's canonical encoding: everything before its text. */
  prefix: string | undefined
}

/** What encodes every field of the chunk but its text, which closes the line. */
function encodedBeforeText({ sessionId, kind, messageId }: Chunk): string {
  const update = messageId === undefined ? { sessionUpdate: kind } : { sessionUpdate: kind, messageId }
  const line = JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId, update: { ...update, content: { type: 'text', text: '' } } } })
  return line.slice(0, -'""}}}}'.length)
}

/**
 * The run's prefix when its first line is exactly the canonical encoding of its chunk (what the
 * SDK, and JSON.stringify, write). A later line made of that prefix, one JSON string and the four
 * closing braces is then the same notification with another text: only the text is parsed.
 */
function runPrefix(line: string, chunk: Chunk): string | undefined {
  const prefix = encodedBeforeText(chunk)
  return line === `${prefix}${JSON.stringify(chunk.text)}}}}}` ? prefix : undefined
}

/** The text of a line that continues a run with a known prefix; undefined when it is anything else. */
function continuedText(line: string, prefix: string): string | undefined {
  if (!line.startsWith(prefix) || !line.endsWith('}}}}')) return undefined
  let text: unknown
  try {
    text = JSON.parse(line.slice(prefix.length, -4))
  } catch {
    return undefined
  }
  return typeof text === 'string' && text.length > 0 ? text : undefined
}

/** The chunk a line carries when it has exactly the plain shape; undefined for anything else. */
export function plainChunk(line: string): Chunk | undefined {
  // Most lines of a stream are chunks; anything without the method cannot be one and skips the parse.
  if (!line.includes('"session/update"')) return undefined
  let message: unknown
  try {
    message = JSON.parse(line)
  } catch {
    return undefined
  }
  if (!hasOnlyKeys(message, 3, 'jsonrpc', 'method', 'params')) return undefined
  const { jsonrpc, method, params } = message as Record<string, unknown>
  if (jsonrpc !== '2.0' || method !== 'session/update' || !hasOnlyKeys(params, 2, 'sessionId', 'update')) return undefined
  const { sessionId, update } = params as Record<string, unknown>
  if (typeof sessionId !== 'string') return undefined
  const withId = hasOnlyKeys(update, 3, 'sessionUpdate', 'messageId', 'content')
  if (!withId && !hasOnlyKeys(update, 2, 'sessionUpdate', 'content')) return undefined
  const { sessionUpdate: kind, messageId, content } = update as Record<string, unknown>
  if (kind !== 'agent_message_chunk' && kind !== 'agent_thought_chunk') return undefined
  if (withId && messageId !== null && typeof messageId !== 'string') return undefined
  if (!hasOnlyKeys(content, 2, 'type', 'text')) return undefined
  const { type, text } = content as Record<string, unknown>
  if (type !== 'text' || typeof text !== 'string' || text.length === 0) return undefined
  return { sessionId, kind, messageId: messageId as string | null | undefined, text }
}

/** A plain object with exactly `count` own keys, all of them among `keys`. */
function hasOnlyKeys(value: unknown, count: number, ...keys: string[]): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  let n = 0
  for (const key in value) {
    if (!Object.hasOwn(value, key) || !keys.includes(key)) return false
    n++
  }
  return n === count
}

function joinedLine(run: Run): string {
  if (run.texts.length === 1) return run.line
  const update: Record<string, unknown> = { sessionUpdate: run.kind }
  if (run.messageId !== undefined) update.messageId = run.messageId
  update.content = { type: 'text', text: run.texts.join('') }
  update._meta = { [MERGED_CHUNKS_META]: run.texts.length }
  return JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: run.sessionId, update } })
}

/**
 * The bytes of one agent's stdout, read by read. `push` returns what the SDK may read now: the
 * complete lines of the read, runs joined; a line's incomplete end waits for the next read. A line
 * longer than one read is passed on as it comes (the SDK's own size limit then applies), so this
 * holds at most one read's worth of bytes.
 */
export class ChunkMerger {
  #tail: Buffer | undefined
  /** Inside a line that did not fit in one read: bytes pass through until its newline. */
  #passing = false

  push(bytes: Buffer): Buffer {
    const held = this.#tail
    let data = held ? Buffer.concat([held, bytes]) : bytes
    this.#tail = undefined
    let out: Buffer[] = []
    if (this.#passing) {
      const end = data.indexOf(NEWLINE)
      if (end === -1) return data
      this.#passing = false
      out = [data.subarray(0, end + 1)]
      data = data.subarray(end + 1)
    }
    const last = data.lastIndexOf(NEWLINE)
    if (last === -1) {
      if (out.length > 0 || !held) {
        // No line ends here: the start of one, held for the next read.
        if (data.length > 0) this.#tail = Buffer.from(data)
        return out[0] ?? Buffer.alloc(0)
      }
      // Two reads and still no end: a long line, which goes on as it comes.
      this.#passing = true
      return data
    }
    if (last + 1 < data.length) this.#tail = Buffer.from(data.subarray(last + 1))
    out.push(Buffer.from(this.#join(data.toString('utf8', 0, last + 1))))
    return out.length === 1 ? out[0]! : Buffer.concat(out)
  }

  /** Whatever is held, at the end of the input. */
  end(): Buffer | undefined {
    const tail = this.#tail
    this.#tail = undefined
    return tail
  }

  /** Complete lines (the text ends with a newline), runs joined. */
  #join(text: string): string {
    const lines: string[] = []
    let run: Run | undefined
    for (let start = 0, end = text.indexOf('\n'); end !== -1; start = end + 1, end = text.indexOf('\n', start)) {
      const line = text.slice(start, end)
      const continued = run?.prefix === undefined ? undefined : continuedText(line, run.prefix)
      if (continued !== undefined) {
        run!.texts.push(continued)
        continue
      }
      const chunk = plainChunk(line)
      if (chunk && run && chunk.sessionId === run.sessionId && chunk.kind === run.kind && (chunk.messageId ?? null) === (run.messageId ?? null)) {
        run.texts.push(chunk.text)
        continue
      }
      if (run) lines.push(joinedLine(run))
      run = undefined
      if (chunk) run = { ...chunk, line, texts: [chunk.text], prefix: runPrefix(line, chunk) }
      else lines.push(line)
    }
    if (run) lines.push(joinedLine(run))
    lines.push('')
    return lines.join('\n')
  }
}

/** How many agent chunks a chunk update carries: the joined count, or 1 for one the agent sent as is. */
export function chunkCount(update: { _meta?: Record<string, unknown> | null }): number {
  const count = update._meta?.[MERGED_CHUNKS_META]
  return typeof count === 'number' && Number.isSafeInteger(count) && count > 1 ? count : 1
}
