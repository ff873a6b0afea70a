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
 */

export interface SendWindowLimits {
  /** Smallest window in bytes. */
  floor: number
  /** Largest window in bytes. */
  ceiling: number
  /** How long the bytes in flight may take the reader to drain. */
  targetDelayMs: number
}

/** Probes outstanding at once: enough to keep a reader busy while earlier pongs travel back. */
const MAX_PROBES = 4
/** Acknowledgements the pace is measured across: several of a bursty reader's read-and-pause cycles. */
const PACE_SPAN = 8

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
  /** The last PACE_SPAN acknowledgements, oldest first: bytes, time, bytes, time, … */
  readonly #acks: number[] = []
  /** Offset of the newest probe (bytes written before it). */
  #probed = 0
  readonly #probes: Probe[] = []
  #nextProbe = 0
  /** Estimated drain rate, bytes per ms. */
  #rate: number
  #size: number

  constructor(
    private readonly limits: SendWindowLimits,
    private readonly now: () => number,
  ) {
    this.#size = limits.floor
    this.#rate = limits.floor / limits.targetDelayMs
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

  wrote(bytes: number): void {
    // The first bytes start the clock the first pace is measured on.
    if (this.#acks.length === 0) this.#acks.push(this.#acked, this.now())
    this.#written += bytes
  }

  /** A frame waits for the window: the outstanding probes measure the reader's pace. */
  held(): void {
    for (const probe of this.#probes) probe.limited = true
  }

  /** A pong arrived; true when it acknowledged bytes (the window may let more out). */
  acknowledge(payload: string): boolean {
    const index = this.#probes.findIndex((p) => p.payload === payload)
    if (index < 0) return false
    const probe = this.#probes[index]!
    // Pongs come back in order: this one also answers every earlier probe.
    this.#probes.splice(0, index + 1)
    const now = this.now()
    this.#acks.push(probe.offset, now)
    if (this.#acks.length > 2 * PACE_SPAN) this.#acks.splice(0, 2)
    // Measured across several acknowledgements: a reader that reads in bursts (a busy tab, a token
    // bucket) answers at once after each read and not at all while it pauses; its pace is the mean.
    const sample = (probe.offset - this.#acks[0]!) / Math.max(now - this.#acks[1]!, 1)
    // A sample taken while we had less to send than the window (not limited) only bounds the pace
    // from below: it may raise the estimate, never lower it.
    if (probe.limited || sample > this.#rate) this.#rate = sample
    this.#size = Math.min(this.limits.ceiling, Math.max(this.limits.floor, Math.round(this.#rate * this.limits.targetDelayMs)))
    this.#acked = probe.offset
    return true
  }

  /**
   * A payload to ping with now, when half a window went out unprobed (a ping costs a frame: a
   * trickle of small frames sends none). Asked after writes and after pongs, which may shrink the
   * window: a closed window always has a probe out, so its pong reopens it.
   */
  probe(): string | undefined {
    if (this.#probes.length >= MAX_PROBES || this.#written - this.#probed < this.#size / 2) return undefined
    const payload = (this.#nextProbe++).toString(36)
    this.#probes.push({ payload, offset: this.#written, limited: !this.open })
    this.#probed = this.#written
    return payload
  }
}
