/**
 * One run per key at a time: callers that ask for a key while its run is in flight share that
 * run's promise instead of starting another (two prompts must not launch two agents for one
 * session). The key is free again once the run settles, fulfilled or rejected.
 */
export class OncePerKey<T> {
  readonly #inFlight = new Map<string, Promise<T>>()

  /** The run in flight for `key`, or a new one `start` begins. */
  run(key: string, start: () => Promise<T>): Promise<T> {
    const running = this.#inFlight.get(key)
    if (running) return running
    const run = start().finally(() => this.#inFlight.delete(key))
    this.#inFlight.set(key, run)
    return run
  }

  has(key: string): boolean {
    return this.#inFlight.has(key)
  }

  /** The runs in flight (those of the keys `include` accepts), for a shutdown to wait on. */
  inFlight(include: (key: string) => boolean = () => true): Promise<T>[] {
    return [...this.#inFlight].filter(([key]) => include(key)).map(([, run]) => run)
  }
}
