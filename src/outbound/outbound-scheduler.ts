/**
 * Per-connection outbound scheduling under graphql-ws. Three classes share one socket:
 * - control: connection_ack, pong, results and errors of queries and mutations; always first.
 *   If it cannot be queued, the connection closes with 1013 so the client reconciles instead of
 *   waiting for a response that was silently dropped.
 * - semantic: every subscription event but MessageUpdated, in order.
 * - replaceable: MessageUpdated, keyed by session + message; a newer update replaces the queued
 *   one in place (a frame may absorb the one it replaces: `ReplaceableFrame.supersede`). A frame
 *   may be written in parts, one per turn (`ReplaceableFrame.take`: an append of more than 16 KiB
 *   of text, or more than the send window takes), its unsent rest queued in its place. Bounded
 *   per session and per connection; a session over its allowance loses its own oldest entry,
 *   never another session's (the entry hears of it: `evicted`). Sessions are served round-robin.
 * A semantic frame of a session is a barrier: that session's replaceables queued before it are
 * written before it, and none queued after it overtakes it. The barrier flushes them from the
 * session's own replaceable queue (at most its allowance), so they never take semantic room.
 * Semantic and replaceable frames also wait for the send window (send-window.ts): the bytes the
 * peer has not yet acknowledged reading stay about `targetDelayMs` of its pace, so a control frame
 * is not written behind megabytes held by the kernel. Control frames never wait for it, and
 * neither does a full semantic lane: the lane's bound is for a peer that stopped reading.
 */
import { SendWindow, type SendWindowLimits } from './send-window.ts'
import { plainFrame, ReplaceableLanes, type Frame, type LaneEvents, type ReplaceableFrame } from './replaceable-lanes.ts'
import { SharedFrame } from './shared-frame.ts'

export type { Frame, ReplaceableFrame } from './replaceable-lanes.ts'

/** What the semantic and control lanes take: a frame, or a member's head and a body shared by many. */
export type OutFrame = Frame | SharedFrame

export const byteLengthOf = (frame: OutFrame): number => (frame instanceof SharedFrame ? frame.byteLength : Buffer.byteLength(frame))

const monotonic = (): number => performance.now()

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
  /** Acknowledged send window for semantic and replaceable frames; absent: only socketHighWater bounds writes. */
  sendWindow?: SendWindowLimits
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
  // 20 ms of a 256 KB/s reader is 5 KB. The ceiling only caps a reader that keeps pace: with
  // pongs back within a few ms, 1 MiB in flight is well beyond what one connection takes here.
  sendWindow: { floor: 4 * 1024, ceiling: 1024 * 1024, targetDelayMs: 20 },
}

/**
 * Room left for what ws adds to a frame (its header, up to 10 bytes) and for a probe's ping, so a
 * write predicted to stay under the high-water mark does.
 */
const WRITE_OVERHEAD = 256

/** The socket as the scheduler sees it. */
export interface OutboundSocket {
  /** Bytes accepted but not yet handed to the OS (ws: bufferedAmount). */
  readonly bufferedAmount: number
  /** Writes one frame; `done`, if given, runs once it left the process (or failed). */
  send(frame: OutFrame, done?: () => void): void
  /** Writes a ping with this payload after the frames written so far (the peer pongs it back once it read them). */
  ping(payload: string): void
  /** Holds the writes made in `writes` and hands them to the OS together (one system call for a frame and its probe). */
  batch?<T>(writes: (target: T) => void, target: T): void
  close(code: number, reason: string): void
}

export interface SchedulerEvents extends LaneEvents {
  overflowClosed?(frameClass: FrameClass): void
}

interface SemanticEntry {
  frame: OutFrame
  sessionId?: string
}

export class OutboundScheduler {
  readonly #control: Frame[] = []
  readonly #semantic: SemanticEntry[] = []
  /** Made with the first replaceable or session frame: a connection that follows only the feed holds none. */
  #lanes: ReplaceableLanes | undefined
  #semanticStreak = 0
  #closed = false
  #closeWhenDrained: { code: number; reason: string } | undefined
  #writing = false
  /** Absent in FIFO mode: the baseline is a plain queue. */
  readonly #window: SendWindow | undefined
  /** One callback for every write that may fill the socket, not a closure per frame; made with the first such write. */
  #written: (() => void) | undefined
  /** Writes in one batch (the socket's batch calls it with the scheduler): no closure per scheduler. */
  static readonly #drain = (scheduler: OutboundScheduler): void => scheduler.#pumpNow()

  constructor(
    private readonly socket: OutboundSocket,
    private readonly limits: SchedulerLimits = DEFAULT_LIMITS,
    private readonly events: SchedulerEvents = {},
    now: () => number = monotonic,
  ) {
    if (limits.sendWindow && !limits.fifo) this.#window = new SendWindow(limits.sendWindow, now)
  }

  #laneSet(): ReplaceableLanes {
    return (this.#lanes ??= new ReplaceableLanes(this.limits, this.events))
  }

  /** The send window's size and bytes in flight (tests and the bench read them). */
  get window(): { size: number; inFlight: number } | undefined {
    return this.#window && { size: this.#window.size, inFlight: this.#window.inFlight }
  }

  /** The peer answered a ping with this payload: bytes before the ping were read. */
  acknowledge(payload: string): void {
    if (this.#closed || !this.#window?.acknowledge(payload)) return
    this.#probe()
    this.pump()
  }

  get depth(): Record<FrameClass, number> {
    return { control: this.#control.length, semantic: this.#semantic.length, replaceable: this.#lanes?.queued ?? 0 }
  }

  /** Sessions with something queued (tests check that nothing is kept for idle sessions). */
  get trackedSessions(): number {
    return this.#lanes?.sessions ?? 0
  }

  get closed(): boolean {
    return this.#closed
  }

  enqueueControl(frame: Frame): void {
    if (this.#closed) return
    if (this.limits.fifo) return this.#enqueueFifo(frame)
    if (this.#control.length >= this.limits.control) return this.#overflow('control')
    this.#control.push(frame)
    this.pump()
  }

  /** `deferred`: more frames follow at once, and the caller pumps after the last (they leave in one write). */
  enqueueSemantic(frame: OutFrame, sessionId?: string, deferred = false): void {
    if (this.#closed || this.#closeWhenDrained) return
    if (this.limits.fifo) return this.#enqueueFifo(frame)
    if (this.#semantic.length >= this.limits.semantic) return this.#overflow('semantic')
    if (sessionId !== undefined) this.#laneSet().semanticQueued(sessionId)
    this.#semantic.push({ frame, sessionId })
    if (!deferred) this.pump()
  }

  enqueueReplaceable(frame: Frame | ReplaceableFrame, sessionId: string, key: string): void {
    if (this.#closed || this.#closeWhenDrained) return
    const entry = typeof frame === 'string' || Buffer.isBuffer(frame) ? plainFrame(frame) : frame
    if (this.limits.fifo) {
      // The baseline has no lanes: every part at once, in order.
      for (let next: ReplaceableFrame | undefined = entry; next; ) {
        const { frame: part, rest } = next.take()
        this.#semantic.push({ frame: part })
        next = rest
      }
      return this.pump()
    }
    this.#laneSet().enqueue(entry, sessionId, key)
    this.pump()
  }

  #enqueueFifo(frame: OutFrame): void {
    this.#semantic.push({ frame })
    this.pump()
  }

  /** Writes while the socket takes more; called again when a write completes. */
  pump(): void {
    if (this.#writing || this.#closed) return
    if (this.socket.batch) this.socket.batch(OutboundScheduler.#drain, this)
    else this.#pumpNow()
  }

  #pumpNow(): void {
    if (this.#writing || this.#closed) return
    this.#writing = true
    try {
      while (!this.#closed && this.socket.bufferedAmount < this.limits.socketHighWater) {
        const next = this.#next()
        if (next === undefined) {
          if (this.#closeWhenDrained) this.close(this.#closeWhenDrained.code, this.#closeWhenDrained.reason)
          return
        }
        const bytes = byteLengthOf(next)
        // Only a write that may leave the socket at its high-water mark needs to say when it is
        // done (the pump resumes then); the rest go without a completion callback each.
        if (this.socket.bufferedAmount + bytes + WRITE_OVERHEAD >= this.limits.socketHighWater) this.socket.send(next, (this.#written ??= () => this.pump()))
        else this.socket.send(next)
        if (this.#window) {
          this.#window.wrote(bytes)
          this.#probe()
        }
      }
    } finally {
      this.#writing = false
    }
  }

  #probe(): void {
    const payload = this.#window!.probe()
    if (payload !== undefined) this.socket.ping(payload)
  }

  #next(): OutFrame | undefined {
    const control = this.#control.shift()
    if (control !== undefined) return control
    // The window paces a reader for latency; it is not a reason to close. Once the semantic lane
    // is full, its frames go to the socket past the window, so only a socket that takes no more
    // (a reader that stopped reading) makes the lane overflow with 1013, not a late pong.
    if (this.#window && !this.#window.open && this.#semantic.length < this.limits.semantic) {
      if (this.#semantic.length > 0 || (this.#lanes?.queued ?? 0) > 0) this.#window.held()
      return undefined
    }
    const preferReplaceable = this.#semanticStreak >= this.limits.semanticBurst || this.#semantic.length === 0
    if (preferReplaceable) {
      const replaceable = this.#lanes?.next(this.#window?.room)
      if (replaceable !== undefined) {
        this.#semanticStreak = 0
        return replaceable
      }
    }
    return this.#nextSemantic()
  }

  #nextSemantic(): OutFrame | undefined {
    const head = this.#semantic[0]
    if (head === undefined) return undefined
    if (head.sessionId !== undefined) {
      // Barrier: the session's replaceables queued before this frame go first, one per call.
      const before = this.#lanes?.beforeSemantic(head.sessionId, this.#window?.room)
      if (before !== undefined) return before
    }
    this.#semantic.shift()
    this.#semanticStreak++
    return head.frame
  }

  #overflow(frameClass: FrameClass): void {
    this.events.overflowClosed?.(frameClass)
    this.close(1013, 'Try again later: outbound queue full')
  }

  /**
   * Closes once the queued control frames are written (responses the peer is owed, such as the
   * one that rotated its own token); subscription frames still queued are dropped, none is taken.
   */
  closeAfterControl(code: number, reason: string): void {
    if (this.#closed) return
    // In FIFO mode (a bench baseline) responses share the one queue: it drains whole.
    if (!this.limits.fifo) {
      this.#semantic.length = 0
      this.#lanes?.clear()
    }
    this.#closeWhenDrained = { code, reason }
    this.pump()
  }

  close(code: number, reason: string): void {
    if (this.#closed) return
    this.#closed = true
    this.#control.length = 0
    this.#semantic.length = 0
    this.#lanes?.clear()
    this.socket.close(code, reason)
  }
}
