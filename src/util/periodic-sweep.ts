import type { Scheduler } from './scheduler.ts'

/**
 * Calls each member about once a period, on one timer for all of them: members are spread over
 * `slots` buckets and one bucket is visited every period / slots, so ten thousand WebSockets cost
 * one timer instead of ten thousand, and their keepalive pings go out in eighths rather than all
 * at once. A member's first visit comes between (slots - 1) / slots of a period and a period after
 * it joined; then one every period. The timer runs only while there are members.
 */
export class PeriodicSweep<T> {
  readonly #buckets: Set<T>[]
  readonly #bucketOf = new Map<T, Set<T>>()
  /** The bucket the next tick visits. */
  #cursor = 0
  #timer: unknown

  constructor(
    private readonly periodMs: number,
    private readonly visit: (member: T) => void,
    private readonly timers: Scheduler,
    /** A visit that throws: reported here, and the others are visited all the same. */
    private readonly onError: (error: unknown) => void,
    slots = 8,
  ) {
    this.#buckets = Array.from({ length: slots }, () => new Set<T>())
  }

  get size(): number {
    return this.#bucketOf.size
  }

  add(member: T): void {
    if (this.#bucketOf.has(member)) return
    // The bucket visited last: its next visit is a whole round of slots away.
    const bucket = this.#buckets[(this.#cursor + this.#buckets.length - 1) % this.#buckets.length]!
    bucket.add(member)
    this.#bucketOf.set(member, bucket)
    this.#timer ??= this.timers.setTimeout(this.#tick, this.periodMs / this.#buckets.length)
  }

  delete(member: T): void {
    this.#bucketOf.get(member)?.delete(member)
    this.#bucketOf.delete(member)
    if (this.#bucketOf.size === 0 && this.#timer !== undefined) {
      this.timers.clearTimeout(this.#timer)
      this.#timer = undefined
    }
  }

  /** Stops visiting anyone (the server closes). */
  clear(): void {
    for (const bucket of this.#buckets) bucket.clear()
    this.#bucketOf.clear()
    if (this.#timer !== undefined) this.timers.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  readonly #tick = (): void => {
    this.#timer = undefined
    const bucket = this.#buckets[this.#cursor]!
    this.#cursor = (this.#cursor + 1) % this.#buckets.length
    // A visit may delete members (a dead peer is dropped): iterate a copy.
    for (const member of [...bucket])
      try {
        this.visit(member)
      } catch (error) {
        this.onError(error)
      }
    if (this.#bucketOf.size > 0) this.#timer ??= this.timers.setTimeout(this.#tick, this.periodMs / this.#buckets.length)
  }
}
