/**
 * Per-connection outbound scheduling under graphql-ws. Three classes share one socket:
 * - control: connection_ack, pong, results and errors of queries and mutations; always first.
 *   If it cannot be queued, the connection closes with 1013 so the client reconciles instead of
 *   waiting for a response that was silently dropped.
 * - semantic: every subscription event but MessageUpdated, in order.
 * - replaceable: MessageUpdated, keyed by session + message; a newer update replaces the queued
 *   one in place. Bounded per session and per connection; a session over its allowance loses its
 *   own oldest entry, never another session's. Sessions are served round-robin.
 * A semantic frame of a session is a barrier: that session's replaceables queued before it are
 * written before it, and none queued after it overtakes it.
 */

export type FrameClass = 'control' | 'semantic' | 'replaceable'

export interface SchedulerLimits {
  control: number
  semantic: number
  replaceablePerSession: number
  replaceablePerConnection: number
  /** After this many consecutive semantic frames, one replaceable frame goes out if any is ready. */
  semanticBurst: number
  /** Bytes the socket may hold unsent before the scheduler stops writing (backpressure). */
  socketHighWater: number
  /**
   * Baseline for measurements only: one unbounded first-in-first-out queue, no classes, no
   * replacement (what a plain graphql-ws server does).
   */
  fifo?: boolean
}

export const DEFAULT_LIMITS: SchedulerLimits = {
  control: 256,
  semantic: 256,
  replaceablePerSession: 32,
  replaceablePerConnection: 256,
  semanticBurst: 8,
  socketHighWater: 64 * 1024,
}

/** The socket as the scheduler sees it. */
export interface OutboundSocket {
  /** Bytes accepted but not yet handed to the OS (ws: bufferedAmount). */
  readonly bufferedAmount: number
  /** Writes one frame; `done` runs once it left the process (or failed). */
  send(frame: string, done: () => void): void
  close(code: number, reason: string): void
}

export interface SchedulerEvents {
  replaced?(sessionId: string): void
  evicted?(sessionId: string): void
  rejected?(sessionId: string): void
  overflowClosed?(frameClass: FrameClass): void
}

interface Replaceable {
  key: string
  frame: string
  /** Semantic frames of this session enqueued before this entry: it waits until they are written. */
  after: number
}

export class OutboundScheduler {
  readonly #control: string[] = []
  readonly #semantic: { frame: string; sessionId?: string; seq?: number }[] = []
  /** sessionId → entries in first-queued order (a replacement keeps its place). */
  readonly #replaceable = new Map<string, Map<string, Replaceable>>()
  #replaceableCount = 0
  /** Per session: semantic frames enqueued / written so far (barrier bookkeeping). */
  readonly #semanticEnqueued = new Map<string, number>()
  readonly #semanticWritten = new Map<string, number>()
  #roundRobin: string[] = []
  #semanticStreak = 0
  #closed = false
  #writing = false

  constructor(
    private readonly socket: OutboundSocket,
    private readonly limits: SchedulerLimits = DEFAULT_LIMITS,
    private readonly events: SchedulerEvents = {},
  ) {}

  get depth(): Record<FrameClass, number> {
    return { control: this.#control.length, semantic: this.#semantic.length, replaceable: this.#replaceableCount }
  }

  get closed(): boolean {
    return this.#closed
  }

  enqueueControl(frame: string): void {
    if (this.#closed) return
    if (this.limits.fifo) return this.#enqueueFifo(frame)
    if (this.#control.length >= this.limits.control) return this.#overflow('control')
    this.#control.push(frame)
    this.pump()
  }

  enqueueSemantic(frame: string, sessionId?: string): void {
    if (this.#closed) return
    if (this.limits.fifo) return this.#enqueueFifo(frame)
    if (sessionId !== undefined) {
      // Barrier: what this session has queued as replaceable goes out before this frame.
      const queued = this.#replaceable.get(sessionId)
      if (queued) {
        for (const entry of queued.values()) this.#semantic.push({ frame: entry.frame })
        this.#replaceableCount -= queued.size
        this.#replaceable.delete(sessionId)
      }
    }
    if (this.#semantic.length >= this.limits.semantic) return this.#overflow('semantic')
    const seq = sessionId === undefined ? undefined : (this.#semanticEnqueued.get(sessionId) ?? 0) + 1
    if (sessionId !== undefined) this.#semanticEnqueued.set(sessionId, seq!)
    this.#semantic.push({ frame, sessionId, seq })
    this.pump()
  }

  enqueueReplaceable(frame: string, sessionId: string, key: string): void {
    if (this.#closed) return
    if (this.limits.fifo) return this.#enqueueFifo(frame)
    let queued = this.#replaceable.get(sessionId)
    const existing = queued?.get(key)
    if (existing) {
      existing.frame = frame // replaced in place: one unsent entry per key
      this.events.replaced?.(sessionId)
      return this.pump()
    }
    if (!queued) {
      queued = new Map()
      this.#replaceable.set(sessionId, queued)
      if (!this.#roundRobin.includes(sessionId)) this.#roundRobin.push(sessionId)
    }
    if (queued.size >= this.limits.replaceablePerSession || this.#replaceableCount >= this.limits.replaceablePerConnection) {
      const oldest = queued.keys().next()
      if (oldest.done) {
        // The connection is full of other sessions' entries: this session cannot take their room.
        this.events.rejected?.(sessionId)
        this.#replaceable.delete(sessionId)
        return
      }
      queued.delete(oldest.value)
      this.#replaceableCount--
      this.events.evicted?.(sessionId)
    }
    queued.set(key, { key, frame, after: this.#semanticEnqueued.get(sessionId) ?? 0 })
    this.#replaceableCount++
    this.pump()
  }

  #enqueueFifo(frame: string): void {
    this.#semantic.push({ frame })
    this.pump()
  }

  /** Writes while the socket takes more; called again when a write completes. */
  pump(): void {
    if (this.#writing || this.#closed) return
    this.#writing = true
    try {
      while (!this.#closed && this.socket.bufferedAmount < this.limits.socketHighWater) {
        const next = this.#next()
        if (next === undefined) return
        this.socket.send(next, () => this.pump())
      }
    } finally {
      this.#writing = false
    }
  }

  #next(): string | undefined {
    const control = this.#control.shift()
    if (control !== undefined) return control
    const preferReplaceable = this.#semanticStreak >= this.limits.semanticBurst || this.#semantic.length === 0
    if (preferReplaceable) {
      const replaceable = this.#nextReplaceable()
      if (replaceable !== undefined) {
        this.#semanticStreak = 0
        return replaceable
      }
    }
    const semantic = this.#semantic.shift()
    if (semantic !== undefined) {
      this.#semanticStreak++
      if (semantic.sessionId !== undefined) this.#semanticWritten.set(semantic.sessionId, semantic.seq!)
      return semantic.frame
    }
    return undefined
  }

  /** Round-robin over sessions; an entry waits for the semantic frames enqueued before it. */
  #nextReplaceable(): string | undefined {
    for (let i = 0; i < this.#roundRobin.length; i++) {
      const sessionId = this.#roundRobin.shift()!
      const queued = this.#replaceable.get(sessionId)
      if (!queued || queued.size === 0) {
        this.#replaceable.delete(sessionId)
        i--
        continue
      }
      this.#roundRobin.push(sessionId)
      const [key, entry] = queued.entries().next().value as [string, Replaceable]
      if (entry.after > (this.#semanticWritten.get(sessionId) ?? 0)) continue
      queued.delete(key)
      this.#replaceableCount--
      return entry.frame
    }
    return undefined
  }

  #overflow(frameClass: FrameClass): void {
    this.events.overflowClosed?.(frameClass)
    this.close(1013, 'Try again later: outbound queue full')
  }

  close(code: number, reason: string): void {
    if (this.#closed) return
    this.#closed = true
    this.#control.length = 0
    this.#semantic.length = 0
    this.#replaceable.clear()
    this.#replaceableCount = 0
    this.socket.close(code, reason)
  }
}
