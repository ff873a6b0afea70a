/**
 * The lifecycle coalescer of one session. Agent chunks are an ingress format, not a persistence
 * cadence: the first non-empty chunk of a message creates its record at once; further adjacent
 * chunks of that message are published at most once per window (100 ms); content is concatenated
 * exactly; a barrier (tool call, permission, clarification, completion, error, disconnect,
 * replacement, shutdown) flushes what is pending before the barrier's own write.
 *
 * Bounded whatever the store's speed: writes run one at a time, in order, and a message has at
 * most one write queued behind the one in flight. A queued update carries no text of its own:
 * when it runs it appends everything received since the previous write, so windows that pass
 * while the store is slow collapse into that one write.
 *
 * Each byte is held once and written once: the coalescer keeps only the text not yet handed to
 * the store (plus the length already written), never the message's whole content, and a write
 * appends at the database rather than rewriting the row.
 */
import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import { tracing, type StageContext, type WindowTrace } from '../observability/tracing.ts'

export type StreamKind = 'MESSAGE' | 'REASONING'

export interface CoalescerSink {
  /** Persists a new streaming message with its first text (and announces it). */
  create(kind: StreamKind, text: string, trace?: StageContext): Promise<string>
  /** Appends `text` to the stored content, whose length is `offset` (and announces the update). */
  update(messageId: string, append: StreamAppend, trace?: StageContext): Promise<void>
}

export interface StreamAppend {
  /** Length of the stored content before this text, in UTF-16 code units. */
  offset: number
  text: string
}


export interface CoalescerStats {
  received: number
  coalesced: number
  flushed: number
}

/** Queued writes beyond which the producer waits (`room()`): a few messages' worth, no more. */
export const MAX_QUEUED_WRITES = 4

interface Streaming {
  kind: StreamKind
  agentMessageId: string | undefined
  /** The stored message id once the create write is done. */
  id: string | undefined
  /** Received and not yet handed to the store. */
  unwritten: string
  /** Length of the content handed to the store so far: the offset of the next append. */
  written: number
  /** Chunks received since the last publication. */
  pending: number
  /** An update of this message waits in the queue (it will pick up later content by itself). */
  updateQueued: boolean
  /**
   * Tracing on: the trace of `unwritten`, started by its oldest chunk (the one that waited
   * longest); the chunks after it are counted into it. Taken by the write that takes the text.
   */
  trace: WindowTrace | undefined
}

interface Write {
  op: 'create' | 'update'
  stream: Streaming
}

export class SessionCoalescer {
  readonly stats: CoalescerStats = { received: 0, coalesced: 0, flushed: 0 }
  #current: Streaming | undefined
  #timer: unknown
  readonly #queue: Write[] = []
  #writing = false
  #idle: Promise<void> = Promise.resolve()
  #roomWaiters: (() => void)[] = []

  constructor(
    private readonly sink: CoalescerSink,
    private readonly onError: (error: unknown) => void,
    private readonly scheduler: Scheduler = realScheduler,
    private readonly windowMs = 100,
    /** Named on the traces of its windows. */
    private readonly sessionId = '',
  ) {}

  /** Writes waiting behind the one in flight. */
  get queuedWrites(): number {
    return this.#queue.length
  }

  /**
   * One agent chunk, or `count` adjacent chunks of one message already joined (chunk-merge.ts):
   * the figures count the agent's chunks either way. Synchronous: ordering is kept by the write queue.
   */
  chunk(kind: StreamKind, text: string, agentMessageId?: string, count = 1): void {
    if (text.length === 0) return
    this.stats.received += count
    const current = this.#current
    if (current && current.kind === kind && current.agentMessageId === agentMessageId) {
      current.unwritten += text
      current.pending++
      if (tracing.on) this.#traceChunk(current, kind, text.length, count)
      this.stats.coalesced += count
      this.#timer ??= this.scheduler.setTimeout(() => this.#publishWindow(), this.windowMs)
      return
    }
    // A different message starts: what is pending of the previous one goes first. Chunks joined
    // behind its first one are folded into its creation.
    this.stats.coalesced += count - 1
    this.#publishPending()
    const stream: Streaming = { kind, agentMessageId, id: undefined, unwritten: text, written: 0, pending: 0, updateQueued: false, trace: undefined }
    if (tracing.on) this.#traceChunk(stream, kind, text.length, count)
    this.#current = stream
    this.#enqueue({ op: 'create', stream })
  }

  /** Resolves once the queue has room: the consumer waits here instead of queueing without end. */
  async room(): Promise<void> {
    while (this.#queue.length >= MAX_QUEUED_WRITES) await new Promise<void>((resolve) => this.#roomWaiters.push(resolve))
  }

  /** Barrier: publishes pending content, ends the current message, resolves when written. */
  async flush(): Promise<void> {
    this.#publishPending()
    this.#current = undefined
    while (this.#writing) await this.#idle
  }

  /**
   * The session went to another instance: nothing pending may be written by this one any more.
   * A write already in flight finishes; nothing queued follows it.
   */
  discard(): void {
    if (this.#timer !== undefined) this.scheduler.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#current = undefined
    this.#queue.length = 0
    this.#wakeRoomWaiters()
  }

  #traceChunk(stream: Streaming, kind: StreamKind, chars: number, count: number): void {
    const trace = stream.trace
    if (!trace) stream.trace = tracing.stages.chunkArrived(this.sessionId, kind, count, chars)
    else {
      trace.chunks += count
      trace.chars += chars
    }
  }

  #publishWindow(): void {
    this.#timer = undefined
    this.#publishPending()
  }

  #publishPending(): void {
    if (this.#timer !== undefined) {
      this.scheduler.clearTimeout(this.#timer)
      this.#timer = undefined
    }
    const current = this.#current
    if (!current || current.pending === 0) return
    current.pending = 0
    if (current.updateQueued) return
    current.updateQueued = true
    this.stats.flushed++
    this.#enqueue({ op: 'update', stream: current })
  }

  #enqueue(write: Write): void {
    this.#queue.push(write)
    if (this.#writing) return
    this.#writing = true
    this.#idle = this.#writeAll()
  }

  /** The single writer: never rejects (a failed write is reported and the next one runs). */
  async #writeAll(): Promise<void> {
    try {
      for (let write = this.#queue.shift(); write; write = this.#queue.shift()) {
        this.#wakeRoomWaiters()
        await this.#write(write).catch((error: unknown) => this.#report(error))
      }
    } finally {
      this.#writing = false
    }
  }

  async #write({ op, stream }: Write): Promise<void> {
    // Taken before the await: chunks arriving meanwhile belong to the next write.
    const text = stream.unwritten
    const offset = stream.written
    const window = stream.trace
    stream.unwritten = ''
    stream.written += text.length
    stream.trace = undefined
    const trace = window && tracing.on ? tracing.stages.windowClosed(window) : undefined
    if (op === 'create') {
      // A failed create leaves no record: later updates of this message write nothing.
      stream.id = await this.sink.create(stream.kind, text, trace)
      return
    }
    stream.updateQueued = false
    // Nothing new, or no record to append to (its create failed): the text is dropped, not hoarded.
    if (stream.id === undefined || text.length === 0) return
    try {
      await this.sink.update(stream.id, { offset, text }, trace)
    } catch (error) {
      // The statement did not commit: its text goes back in front, so the next write carries it.
      stream.unwritten = text + stream.unwritten
      stream.written = offset
      throw error
    }
  }

  #wakeRoomWaiters(): void {
    const waiters = this.#roomWaiters
    this.#roomWaiters = []
    for (const wake of waiters) wake()
  }

  #report(error: unknown): void {
    try {
      this.onError(error)
    } catch {
      // The error handler's own failure must not stop the writer of this session.
    }
  }
}
