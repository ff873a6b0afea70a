/**
 * An acknowledged send window over one WebSocket. `ws`'s bufferedAmount only sees bytes not yet
 * handed to the kernel, and on loopback the kernel's send and receive buffers absorb megabytes: a
 * response written behind them waits seconds for a slow reader whatever the scheduler does. So
 * the scheduler bounds the bytes in flight (written, not yet known to be read) instead. A peer
 * answers a ping only once it has parsed every byte before it (TCP keeps order; browsers and
 * `ws` answer as they parse), so the pong of a ping carrying a unique payload, sent after byte N,
 * proves bytes up to N were read.
 *
 * The window is sized from the drain rate the pongs measure (bytes acknowledged per ms × a target
 * delay), between a floor (a slow reader still gets something in flight) and a ceiling (so a fast
 * reader is not held below its pace), so a slow reader's buffers hold about `targetDelayMs` of
 * data and a control frame written now is read after about that long.
 *
 * Probes cost a ping and a pong each, so they go only where the window can matter: once the bytes
 * in flight pass a mark (a fresh connection's window is that mark, so a trickle of small frames
 * sends none until then), or, for a reader known to be slow, every half window. A closed window
 * always has a probe out, whose pong reopens it.
 */

export interface SendWindowLimits {
  /** Smallest window in bytes. */
  floor: number
  /** Largest window in bytes. */
  ceiling: number
  /** How long the bytes in flight may take the reader to drain. */
  targetDelayMs: number
  /** Bytes in flight past which a reader not known to be slow is probed; a fresh connection's window (default 16 KiB). */
  probeMark?: number
}

/** Probes outstanding at once: enough to keep a reader busy while earlier pongs travel back. */
const MAX_PROBES = 4
/**
 * The pace is the mean over at least this many target delays: a reader that reads in bursts (a
 * busy tab, a token bucket) answers at once after each read and not at all while it pauses, so a
 * shorter span would take a burst for its pace.
 */
const PACE_SPAN_DELAYS = 10
/** Acknowledgements kept for the span, at most. */
const MAX_POINTS = 64
const DEFAULT_PROBE_MARK = 16 * 1024

interface Probe {
  payload: string
  /** Bytes written when the ping went out: its pong acknowledges up to here. */
  offset: number
  /** The window held a frame back while this probe was out: its sample is the reader's pace, not ours. */
  limited: boolean
}

export class SendWindow {
  #written = 0
  #acked = 0
  /** Points the pace is measured from, oldest first: offset, time, offset, time, … */
  #points: number[] = []
  /** Offset of the newest probe (bytes written before it). */
  #probed = 0
  readonly #probes: Probe[] = []
  #nextProbe = 0
  /** Estimated drain rate, bytes per ms. */
  #rate: number
  #size: number
  /** A frame waited for the window, or the reader's measured pace put the window below its ceiling. */
  #slow = false
  /**
   * Since when a frame has waited for the window, and what was acknowledged then: from then on the
   * reader, not our stream, sets the pace, so a sample over that time (and no quiet time before
   * it, when a bursty stream had nothing to send) is the reader's pace.
   */
  #heldSince: { at: number; acked: number } | undefined
  readonly #mark: number
  readonly #spanMs: number

  constructor(
    private readonly limits: SendWindowLimits,
    private readonly now: () => number,
  ) {
    this.#mark = limits.probeMark ?? DEFAULT_PROBE_MARK
    this.#size = this.#clamp(this.#mark)
    this.#rate = this.#size / limits.targetDelayMs
    this.#spanMs = PACE_SPAN_DELAYS * limits.targetDelayMs
  }

  /** Current window in bytes. */
  get size(): number {
    return this.#size
  }

  /** Bytes written and not yet acknowledged. */
  get inFlight(): number {
    return this.#written - this.#acked
  }

  /** Bytes the window still takes before it closes (0 when closed). */
  get room(): number {
    return Math.max(0, this.#size - this.inFlight)
  }

  /** Whether a frame that is not control may be written now. */
  get open(): boolean {
    return this.inFlight < this.#size
  }

  /** Whether the reader is known to be slow (the window paces it; probes every half window). */
  get slow(): boolean {
    return this.#slow
  }

  wrote(bytes: number): void {
    // Bytes written with no probe out, after everything was acknowledged or a span after the last
    // point, start a new measurement: what was written before (a trickle nobody probed, or a burst
    // read whole) tells nothing of the pace, and counting the quiet time would take it for slowness.
    const last = this.#points.at(-1)
    if (this.#probes.length === 0 && (last === undefined || this.inFlight === 0 || this.now() - last >= this.#spanMs)) {
      this.#points = [this.#written, this.now()]
    }
    this.#written += bytes
  }

  /** A frame waits for the window: the outstanding probes measure the reader's pace. */
  held(): void {
    this.#slow = true
    this.#heldSince ??= { at: this.now(), acked: this.#acked }
    for (const probe of this.#probes) probe.limited = true
  }

  /** A pong arrived; true when it acknowledged bytes (the window may let more out). */
  acknowledge(payload: string): boolean {
    const index = this.#probes.findIndex((p) => p.payload === payload)
    if (index < 0) return false
    const probe = this.#probes[index]!
    // Pongs come back in order: this one also answers every earlier probe.
    this.#probes.splice(0, index + 1)
    this.#acked = probe.offset
    this.#sample(probe)
    return true
  }

  /**
   * The pace since the span's first point. A sample taken while a frame waited (limited) may lower
   * the estimate; raising it takes the pace over at least the span (a burst of reads counts at the
   * mean pace around it) unless more than twice the mark was read, and at most doubles it per
   * acknowledgement. A sample taken while we had
   * less to send than the window (not limited) only bounds the pace from below: it may raise the
   * estimate, never lower it.
   */
  #sample(probe: Probe): void {
    const now = this.now()
    const points = this.#points
    points.push(probe.offset, now)
    // The newest point at least a span old is the first one kept.
    let first = 0
    while (first + 2 < points.length - 2 && now - points[first + 3]! >= this.#spanMs) first += 2
    first = Math.max(first, points.length - 2 * MAX_POINTS)
    if (first > 0) points.splice(0, first)
    const bytes = probe.offset - points[0]!
    const elapsed = now - points[1]!
    const measured = bytes / Math.max(elapsed, 1)
    // More than a burst's worth (twice the mark) read that fast is a fast reader's pace, not a burst.
    const sustained = bytes >= 2 * this.#mark ? measured : bytes / Math.max(elapsed, this.#spanMs)
    const held = this.#heldSince
    this.#heldSince = undefined
    const paced = held && (probe.offset - held.acked) / Math.max(now - held.at, 1)
    if (probe.limited && paced !== undefined && paced < this.#rate) this.#rate = paced
    else if (sustained > this.#rate) this.#rate = Math.min(sustained, 2 * this.#rate)
    this.#size = this.#clamp(Math.round(this.#rate * this.limits.targetDelayMs))
    if (probe.limited) this.#slow = this.#size < this.limits.ceiling
    else if (this.#size >= this.limits.ceiling) this.#slow = false
  }

  #clamp(size: number): number {
    return Math.min(this.limits.ceiling, Math.max(this.limits.floor, size))
  }

  /**
   * A payload to ping with now, or undefined. Asked after writes and after pongs, which may shrink
   * the window. A closed window always has a probe out (its pong reopens it); otherwise a probe
   * goes after half a window written unprobed, and only for a reader known to be slow or once the
   * bytes in flight pass the mark: a fast reader receiving a trickle sends none per frame.
   */
  probe(): string | undefined {
    if (this.#probes.length >= MAX_PROBES || this.#written === this.#probed) return undefined
    const closedUnprobed = !this.open && this.#probes.length === 0
    if (!closedUnprobed) {
      if (this.#written - this.#probed < this.#size / 2) return undefined
      if (!this.#slow && this.inFlight < Math.min(this.#mark, this.#size)) return undefined
    }
    const payload = (this.#nextProbe++).toString(36)
    this.#probes.push({ payload, offset: this.#written, limited: !this.open })
    this.#probed = this.#written
    return payload
  }
}
