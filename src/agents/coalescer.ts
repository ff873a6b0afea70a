/**
 * The lifecycle coalescer of one session. Agent chunks are an ingress format, not a persistence
 * cadence: the first non-empty chunk of a message creates its record at once; further adjacent
 * chunks of that message are published at most once per window (100 ms); content is concatenated
 * exactly; a barrier (tool call, permission, clarification, completion, error, disconnect,
 * replacement, shutdown) flushes what is pending before the barrier's own write.
 */

export type StreamKind = 'MESSAGE' | 'REASONING'

export interface CoalescerSink {
  /** Persists a new streaming message with its first text (and announces it). */
  create(kind: StreamKind, text: string): Promise<string>
  /** Persists the message's whole content so far (and announces the update). */
  update(messageId: string, content: string): Promise<void>
}

export interface Scheduler {
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const realScheduler: Scheduler = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

export interface CoalescerStats {
  received: number
  coalesced: number
  flushed: number
}

interface Streaming {
  kind: StreamKind
  agentMessageId: string | undefined
  /** Resolves to the stored message id once the create write is done. */
  id: Promise<string>
  content: string
  /** Chunks received since the last publication. */
  pending: number
}

export class SessionCoalescer {
  readonly stats: CoalescerStats = { received: 0, coalesced: 0, flushed: 0 }
  #current: Streaming | undefined
  #timer: unknown
  /** Writes of this session, in order. */
  #chain: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly sink: CoalescerSink,
    private readonly onError: (error: unknown) => void,
    private readonly scheduler: Scheduler = realScheduler,
    private readonly windowMs = 100,
  ) {}

  /** One agent chunk. Synchronous: ordering is kept by the write chain. */
  chunk(kind: StreamKind, text: string, agentMessageId?: string): void {
    if (text.length === 0) return
    this.stats.received++
    const current = this.#current
    if (current && current.kind === kind && current.agentMessageId === agentMessageId) {
      current.content += text
      current.pending++
      this.stats.coalesced++
      this.#timer ??= this.scheduler.setTimeout(() => this.#publishWindow(), this.windowMs)
      return
    }
    // A different message starts: what is pending of the previous one goes first.
    this.#publishPending()
    const content = text
    const id = this.#enqueue(() => this.sink.create(kind, content)) as Promise<string>
    this.#current = { kind, agentMessageId, id, content, pending: 0 }
  }

  /** Barrier: publishes pending content, ends the current message, resolves when written. */
  async flush(): Promise<void> {
    this.#publishPending()
    this.#current = undefined
    await this.#chain
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
    const content = current.content
    this.stats.flushed++
    this.#enqueue(async () => this.sink.update(await current.id, content))
  }

  #enqueue<T>(write: () => Promise<T>): Promise<T | undefined> {
    const next = this.#chain.then(write).catch((error: unknown) => {
      this.onError(error)
      return undefined
    })
    this.#chain = next
    return next
  }
}
