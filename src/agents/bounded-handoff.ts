/**
 * The bounded queue between one agent's ACP connection and its session lifecycle. push() never
 * drops: the producer side reads the agent's stdout only while waitForSpace() resolves, so a
 * full queue stops reading that agent's output (its pipe fills and the agent itself slows down)
 * while every other session keeps flowing. close() cancels waiting readers and producers.
 *
 * Capacity counts what the items carry (`weigh`), not items: an input joining many agent chunks
 * takes as much room as those chunks would have one by one.
 */
export class BoundedHandoff<T> {
  #items: T[] = []
  #weights: number[] = []
  #size = 0
  #closed = false
  #consumer: (() => void) | undefined
  #spaceWaiters: (() => void)[] = []
  highWater = 0

  constructor(
    readonly capacity: number,
    private readonly weigh: (item: T) => number = () => 1,
  ) {}

  /** The weight queued. */
  get size(): number {
    return this.#size
  }

  push(item: T): void {
    if (this.#closed) return
    const weight = this.weigh(item)
    this.#items.push(item)
    this.#weights.push(weight)
    this.#size += weight
    this.highWater = Math.max(this.highWater, this.#size)
    const consumer = this.#consumer
    this.#consumer = undefined
    consumer?.()
  }

  /** Resolves while the queue has room (immediately, or once the consumer caught up); false once closed. */
  async waitForSpace(): Promise<boolean> {
    while (!this.#closed && this.#size >= this.capacity)
      await new Promise<void>((resolve) => this.#spaceWaiters.push(resolve))
    return !this.#closed
  }

  /** Items in arrival order until close(). */
  async *drain(): AsyncGenerator<T> {
    for (;;) {
      if (this.#items.length > 0) {
        const item = this.#items.shift()!
        this.#size -= this.#weights.shift()!
        if (this.#size < this.capacity) this.#wakeProducers()
        yield item
        continue
      }
      if (this.#closed) return
      await new Promise<void>((resolve) => (this.#consumer = resolve))
    }
  }

  /** Stops the handoff; items not yet consumed are still drained, producers stop waiting. */
  close(): void {
    this.#closed = true
    this.#wakeProducers()
    const consumer = this.#consumer
    this.#consumer = undefined
    consumer?.()
  }

  #wakeProducers(): void {
    const waiters = this.#spaceWaiters
    this.#spaceWaiters = []
    for (const wake of waiters) wake()
  }
}
