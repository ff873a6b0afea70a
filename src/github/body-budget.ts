/**
 * A byte budget shared by every webhook request of the process: the bytes of request bodies
 * held in memory before their signature is verified. Anyone can send those bodies, so without a
 * shared bound thirty concurrent 5 MB posts cost 150 MB before the first one is refused.
 * Synchronous take and release (one event loop), so concurrent requests never overdraw it.
 */
export class ByteBudget {
  private used = 0

  constructor(readonly capacity: number) {}

  /** Takes `bytes` when they fit in what is left; false (and nothing taken) when they do not. */
  tryTake(bytes: number): boolean {
    if (this.used + bytes > this.capacity) return false
    this.used += bytes
    return true
  }

  release(bytes: number): void {
    this.used -= bytes
    if (this.used < 0) throw new Error(`webhook body budget released more than was taken (${this.used})`)
  }

  get inUse(): number {
    return this.used
  }
}
