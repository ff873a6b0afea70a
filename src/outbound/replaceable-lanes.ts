/**
 * The replaceable lane of one connection's outbound scheduler (outbound-scheduler.ts): per
 * session, the frames a newer one of the same key replaces in place while unsent, bounded per
 * session and per connection, served round-robin across sessions. Each session's lane also counts
 * its semantic frames, so that a replaceable never overtakes a semantic frame of its session
 * queued before it, and a semantic frame waits for the session's replaceables queued before it
 * (the barrier).
 */

/**
 * A frame as written: a string, or a Buffer rendered once and shared (a cohort's event goes to
 * thousands of members as the same payload bytes).
 */
export type Frame = string | Buffer

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

export const plainFrame = (frame: Frame): ReplaceableFrame => ({ take: () => ({ frame }) })

export interface LaneLimits {
  replaceablePerSession: number
  replaceablePerConnection: number
}

export interface LaneEvents {
  replaced?(sessionId: string): void
  /** A queued replaceable of this session was dropped to make room (its own or the connection's allowance). */
  evicted?(sessionId: string): void
}

interface Replaceable {
  frame: ReplaceableFrame
  /** This session's semantic frames enqueued before this entry: it waits until they are written. */
  after: number
}

/** What the lanes hold for one session; dropped as soon as nothing of the session is queued. */
interface SessionLane {
  semanticEnqueued: number
  semanticWritten: number
  /** key → entry, in first-queued order (a replacement keeps its place). */
  replaceables: Map<string, Replaceable>
}

export class ReplaceableLanes {
  /** Insertion order doubles as the round-robin order: a served session moves to the end. */
  readonly #lanes = new Map<string, SessionLane>()
  #queued = 0

  constructor(
    private readonly limits: LaneLimits,
    private readonly events: LaneEvents,
  ) {}

  /** Replaceable entries queued, every session together. */
  get queued(): number {
    return this.#queued
  }

  /** Sessions with something queued (tests check that nothing is kept for idle sessions). */
  get sessions(): number {
    return this.#lanes.size
  }

  /** A semantic frame of the session was queued: the session's replaceables queued from now on wait for it. */
  semanticQueued(sessionId: string): void {
    this.#lane(sessionId).semanticEnqueued++
  }

  enqueue(entry: ReplaceableFrame, sessionId: string, key: string): void {
    const lane = this.#lane(sessionId)
    const existing = lane.replaceables.get(key)
    if (existing) {
      // Replaced in place: one unsent entry per key.
      existing.frame = entry.supersede ? entry.supersede(existing.frame) : entry
      this.events.replaced?.(sessionId)
      return
    }
    if (lane.replaceables.size >= this.limits.replaceablePerSession) this.#evictOldest(sessionId, lane)
    else if (this.#queued >= this.limits.replaceablePerConnection) this.#evictFromFullest(sessionId, lane)
    lane.replaceables.set(key, { frame: entry, after: lane.semanticEnqueued })
    this.#queued++
  }

  /**
   * The barrier before the session's oldest queued semantic frame: the session's replaceable
   * queued before that frame, one per call; undefined once none is left, and the semantic frame
   * then counts as written.
   */
  beforeSemantic(sessionId: string, room: number | undefined): Frame | undefined {
    const lane = this.#lanes.get(sessionId)
    if (!lane) return undefined
    const before = this.#takeReady(sessionId, lane, room)
    if (before !== undefined) return before
    lane.semanticWritten++
    this.#forgetIfIdle(sessionId, lane)
    return undefined
  }

  /** Round-robin over sessions; an entry waits for the semantic frames enqueued before it. */
  next(room: number | undefined): Frame | undefined {
    for (const [sessionId, lane] of this.#lanes) {
      const frame = this.#takeReady(sessionId, lane, room)
      if (frame === undefined) continue
      if (this.#lanes.has(sessionId)) {
        this.#lanes.delete(sessionId)
        this.#lanes.set(sessionId, lane)
      }
      return frame
    }
    return undefined
  }

  clear(): void {
    this.#lanes.clear()
    this.#queued = 0
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
    this.#queued--
    entry.frame.evicted?.()
    this.events.evicted?.(sessionId)
  }

  /** The session's oldest replaceable, if no earlier semantic frame of the session is still queued. */
  #takeReady(sessionId: string, lane: SessionLane, room: number | undefined): Frame | undefined {
    const oldest = lane.replaceables.entries().next()
    if (oldest.done) return undefined
    const [key, entry] = oldest.value
    if (entry.after > lane.semanticWritten) return undefined
    const { frame, rest } = entry.frame.take(room)
    if (rest) {
      // Written in parts: the rest keeps its place (and its barrier) for a later turn.
      entry.frame = rest
      return frame
    }
    lane.replaceables.delete(key)
    this.#queued--
    this.#forgetIfIdle(sessionId, lane)
    return frame
  }

  #forgetIfIdle(sessionId: string, lane: SessionLane): void {
    if (lane.replaceables.size === 0 && lane.semanticWritten === lane.semanticEnqueued) this.#lanes.delete(sessionId)
  }
}
