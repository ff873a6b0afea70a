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
 * A frame as written: a string, or a Buffer rendered once and shared (a cohort's event goes to
 * thousands of members as the same payload bytes).
 */
export type Frame = string | Buffer

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
  send(frame: Frame, done?: () => void): void
  /** Writes a ping with this payload after the frames written so far (the peer pongs it back once it read them). */
  ping(payload: string): void
  /** Holds the writes made in `writes` and hands them to the OS together (one system call for a frame and its probe). */
  batch?(writes: () => void): void
  close(code: number, reason: string): void
}

export interface SchedulerEvents {
  replaced?(sessionId: string): void
  /** A queued replaceable of this session was dropped to make room (its own or the connection's allowance). */
  evicted?(sessionId: string): void
  overflowClosed?(frameClass: FrameClass): void
}

/**
 * A replaceable frame that takes part in its own replacement. Rendered when written, so a frame
 * that absorbed many others is serialized once, not once per absorption.
 */
export interface ReplaceableFrame {
  /**
   * The frame to write now. A frame written in parts returns its first part and the `rest`, which
   * stays queued under the same key, in the same place: its next part goes out on a later turn of
   * the lane (so control frames and other sessions go in between), and a newer update of the key
   * supersedes the rest. `room`: the bytes the send window still takes (absent: no window), a hint
   * for the size of a part, so that what a control frame written next waits behind stays about
   * the window.
   */
  take(room?: number): { frame: Frame; rest?: ReplaceableFrame }
  /** Replaces the undelivered `previous` of the same key: returns what is queued instead (default: this frame). */
  supersede?(previous: ReplaceableFrame): ReplaceableFrame
  /** Dropped unsent to make room: the next frame of its key follows a gap. */
  evicted?(): void
}

const plainFrame = (frame: Frame): ReplaceableFrame => ({ take: () => ({ frame }) })

interface Replaceable {
  frame: ReplaceableFrame
  /** This session's semantic frames enqueued before this entry: it waits until they are written. */
  after: number
}

/** What the scheduler holds for one session; dropped as soon as nothing of the session is queued. */
interface SessionLane {
  semanticEnqueued: number
  semanticWritten: number
  /** key → entry, in first-queued order (a replacement keeps its place). */
  replaceables: Map<string, Replaceable>
}

interface SemanticEntry {
  frame: Frame
  sessionId?: string
}

export class OutboundScheduler {
  readonly #control: Frame[] = []
  readonly #semantic: SemanticEntry[] = []
  /** Insertion order doubles as the round-robin order: a served session moves to the end. */
  readonly #lanes = new Map<string, SessionLane>()
  #replaceableCount = 0
  #semanticStreak = 0
  #closed = false
  #closeWhenDrained: { code: number; reason: string } | undefined
  #writing = false
  /** Absent in FIFO mode: the baseline is a plain queue. */
  readonly #window: SendWindow | undefined
  /** One callback for every write, not a closure per frame. */
  readonly #written = () => this.pump()

  constructor(
    private readonly socket: OutboundSocket,
    private readonly limits: SchedulerLimits = DEFAULT_LIMITS,
    private readonly events: SchedulerEvents = {},
    now: () => number = () => performance.now(),
  ) {
    if (limits.sendWindow && !limits.fifo) this.#window = new SendWindow(limits.sendWindow, now)
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
    return { control: this.#control.length, semantic: this.#semantic.length, replaceable: this.#replaceableCount }
  }

  /** Sessions with something queued (tests check that nothing is kept for idle sessions). */
  get trackedSessions(): number {
    return this.#lanes.size
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

  enqueueSemantic(frame: Frame, sessionId?: string): void {
    if (this.#closed || this.#closeWhenDrained) return
    if (this.limits.fifo) return this.#enqueueFifo(frame)
    if (this.#semantic.length >= this.limits.semantic) return this.#overflow('semantic')
    if (sessionId !== undefined) this.#lane(sessionId).semanticEnqueued++
    this.#semantic.push({ frame, sessionId })
    this.pump()
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
    const lane = this.#lane(sessionId)
    const existing = lane.replaceables.get(key)
    if (existing) {
      // Replaced in place: one unsent entry per key.
      existing.frame = entry.supersede ? entry.supersede(existing.frame) : entry
      this.events.replaced?.(sessionId)
      return this.pump()
    }
    if (lane.replaceables.size >= this.limits.replaceablePerSession) this.#evictOldest(sessionId, lane)
    else if (this.#replaceableCount >= this.limits.replaceablePerConnection) this.#evictFromFullest(sessionId, lane)
    lane.replaceables.set(key, { frame: entry, after: lane.semanticEnqueued })
    this.#replaceableCount++
    this.pump()
  }

  #lane(sessionId: string): SessionLane {
    let lane = this.#lanes.get(sessionId)
    if (!lane) {
      lane = { semanticEnqueued: 0, semanticWritten: 0, replaceables: new Map() }
      this.#lanes.set(sessionId, lane)
    }
    return lane
  }

  /** The connection allowance is full: the session holding the most keys pays, never a quieter one. */
  #evictFromFullest(sessionId: string, own: SessionLane): void {
    let fullestId = sessionId
    let fullest = own
    for (const [id, lane] of this.#lanes) if (lane.replaceables.size > fullest.replaceables.size) [fullestId, fullest] = [id, lane]
    this.#evictOldest(fullestId, fullest)
    if (fullest !== own) this.#forgetIfIdle(fullestId, fullest)
  }

  #evictOldest(sessionId: string, lane: SessionLane): void {
    const oldest = lane.replaceables.entries().next()
    if (oldest.done) return
    const [key, entry] = oldest.value
    lane.replaceables.delete(key)
    this.#replaceableCount--
    entry.frame.evicted?.()
    this.events.evicted?.(sessionId)
  }

  #enqueueFifo(frame: Frame): void {
    this.#semantic.push({ frame })
    this.pump()
  }

  /** Writes while the socket takes more; called again when a write completes. */
  pump(): void {
    if (this.#writing || this.#closed) return
    if (this.socket.batch) this.socket.batch(this.#pumpNow)
    else this.#pumpNow()
  }

  readonly #pumpNow = (): void => {
    if (this.#writing || this.#closed) return
    this.#writing = true
    try {
      while (!this.#closed && this.socket.bufferedAmount < this.limits.socketHighWater) {
        const next = this.#next()
        if (next === undefined) {
          if (this.#closeWhenDrained) this.close(this.#closeWhenDrained.code, this.#closeWhenDrained.reason)
          return
        }
        const bytes = Buffer.byteLength(next)
        // Only a write that may leave the socket at its high-water mark needs to say when it is
        // done (the pump resumes then); the rest go without a completion callback each.
        if (this.socket.bufferedAmount + bytes + WRITE_OVERHEAD >= this.limits.socketHighWater) this.socket.send(next, this.#written)
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

  #next(): Frame | undefined {
    const control = this.#control.shift()
    if (control !== undefined) return control
    // The window paces a reader for latency; it is not a reason to close. Once the semantic lane
    // is full, its frames go to the socket past the window, so only a socket that takes no more
    // (a reader that stopped reading) makes the lane overflow with 1013, not a late pong.
    if (this.#window && !this.#window.open && this.#semantic.length < this.limits.semantic) {
      if (this.#semantic.length > 0 || this.#replaceableCount > 0) this.#window.held()
      return undefined
    }
    const preferReplaceable = this.#semanticStreak >= this.limits.semanticBurst || this.#semantic.length === 0
    if (preferReplaceable) {
      const replaceable = this.#nextReplaceable()
      if (replaceable !== undefined) {
        this.#semanticStreak = 0
        return replaceable
      }
    }
    return this.#nextSemantic()
  }

  #nextSemantic(): Frame | undefined {
    const head = this.#semantic[0]
    if (head === undefined) return undefined
    const lane = head.sessionId === undefined ? undefined : this.#lanes.get(head.sessionId)
    if (lane) {
      // Barrier: the session's replaceables queued before this frame go first, one per call.
      const before = this.#takeReady(head.sessionId!, lane)
      if (before !== undefined) return before
      lane.semanticWritten++
    }
    this.#semantic.shift()
    this.#semanticStreak++
    if (lane) this.#forgetIfIdle(head.sessionId!, lane)
    return head.frame
  }

  /** Round-robin over sessions; an entry waits for the semantic frames enqueued before it. */
  #nextReplaceable(): Frame | undefined {
    for (const [sessionId, lane] of this.#lanes) {
      const frame = this.#takeReady(sessionId, lane)
      if (frame === undefined) continue
      if (this.#lanes.has(sessionId)) {
        this.#lanes.delete(sessionId)
        this.#lanes.set(sessionId, lane)
      }
      return frame
    }
    return undefined
  }

  /** The session's oldest replaceable, if no earlier semantic frame of the session is still queued. */
  #takeReady(sessionId: string, lane: SessionLane): Frame | undefined {
    const oldest = lane.replaceables.entries().next()
    if (oldest.done) return undefined
    const [key, entry] = oldest.value
    if (entry.after > lane.semanticWritten) return undefined
    const { frame, rest } = entry.frame.take(this.#window?.room)
    if (rest) {
      // Written in parts: the rest keeps its place (and its barrier) for a later turn.
      entry.frame = rest
      return frame
    }
    lane.replaceables.delete(key)
    this.#replaceableCount--
    this.#forgetIfIdle(sessionId, lane)
    return frame
  }

  #forgetIfIdle(sessionId: string, lane: SessionLane): void {
    if (lane.replaceables.size === 0 && lane.semanticWritten === lane.semanticEnqueued) this.#lanes.delete(sessionId)
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
      this.#lanes.clear()
      this.#replaceableCount = 0
    }
    this.#closeWhenDrained = { code, reason }
    this.pump()
  }

  close(code: number, reason: string): void {
    if (this.#closed) return
    this.#closed = true
    this.#control.length = 0
    this.#semantic.length = 0
    this.#lanes.clear()
    this.#replaceableCount = 0
    this.socket.close(code, reason)
  }
}
