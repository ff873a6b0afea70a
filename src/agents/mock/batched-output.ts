import type { Writable } from 'node:stream'

/** Bytes past which a batch goes out at once instead of at the end of the turn of the event loop. */
export const BATCH_BYTES = 64 * 1024

export interface BatchedOutput {
  /** The SDK's output stream. */
  stream: WritableStream<Uint8Array>
  /**
   * Queues bytes or text behind everything written before. Resolves at once (undefined) unless a
   * full batch went out: then once the pipe took it and one turn of the event loop has passed.
   */
  write(data: Uint8Array | string): Promise<void> | undefined
  /** Sends what is batched now: for exiting on purpose (the script's `crash` step). */
  flush(): void
}

/**
 * The mock agent's stdout, written in batches. The SDK hands over one encoded message per write; a
 * pipe write per message (a system call here and a read on the server's side, for a few hundred
 * bytes) made the mock agent, not the server, the limit of a fast stream. Messages written in one
 * turn of the event loop go out together, in order, at the end of it (or as soon as a batch is
 * full); nothing is held past that turn, so a request is out before its answer is awaited, as
 * before. A full batch waits for the pipe to drain and yields one turn, so a long stream still
 * reads a session/cancel while it runs.
 */
export function batchedOutput(out: Writable, batchBytes = BATCH_BYTES): BatchedOutput {
  let pieces: Buffer[] = []
  // Text written in a row is joined once per batch rather than encoded line by line.
  let text = ''
  let size = 0
  let scheduled = false
  const flush = () => {
    if (text) pieces.push(Buffer.from(text))
    text = ''
    if (pieces.length === 0) return
    const batch = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces)
    pieces = []
    size = 0
    out.write(batch)
  }
  const write = (data: Uint8Array | string): Promise<void> | undefined => {
    if (typeof data === 'string') text += data
    else {
      if (text) pieces.push(Buffer.from(text))
      text = ''
      pieces.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength))
    }
    // UTF-16 length for text: a bound on the batch, not an exact byte count.
    size += data.length
    if (size < batchBytes) {
      if (!scheduled) {
        scheduled = true
        setImmediate(() => {
          scheduled = false
          flush()
        })
      }
      return undefined
    }
    flush()
    const drained = out.writableNeedDrain ? new Promise<void>((resolve) => out.once('drain', resolve)) : Promise.resolve()
    return drained.then(() => new Promise<void>((resolve) => setImmediate(resolve)))
  }
  const stream = new WritableStream<Uint8Array>({ write: (chunk) => write(chunk), close: flush })
  return { stream, write, flush }
}

/** A JSON-RPC notification as the SDK's ndJsonStream encodes it: one JSON line. */
export function notificationLine(method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n'
}

/**
 * The line of one text chunk notification, for a stream of many: what notificationLine makes of
 * `{ sessionId, update: { sessionUpdate: kind, messageId, content: { type: 'text', text } } }`,
 * with everything but the text encoded once.
 */
export function chunkLines(sessionId: string, kind: 'agent_message_chunk' | 'agent_thought_chunk', messageId: string): (text: string) => string {
  const empty = notificationLine('session/update', { sessionId, update: { sessionUpdate: kind, messageId, content: { type: 'text', text: '' } } })
  // The text is the last value of the line: `"text":""}}}}` ends it.
  const at = empty.lastIndexOf('""')
  const head = empty.slice(0, at)
  const tail = empty.slice(at + 2)
  return (text) => head + JSON.stringify(text) + tail
}
