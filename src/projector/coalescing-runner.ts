import { setImmediate as nextMacrotask } from 'node:timers/promises'

/**
 * Runs one job per key at a time. Requests for a key that is already running collapse into a
 * single follow-up run, so a burst of source events costs at most two projections, and other
 * keys never wait for it.
 *
 * A run starts in a later macrotask than its request, never in the microtasks of the write that
 * asked for it. On SQLite every statement completes synchronously (better-sqlite3), so a job
 * started inline would run to its end inside the request that wrote the source row: the
 * mutation's answer waited for a projection it does not need, and the loop for both. Deferred,
 * the request answers first and the projections follow, with the poll phase (other requests'
 * I/O) between them; requests that arrive meanwhile collapse into the same run.
 */
export class CoalescingRunner<K> {
  #states = new Map<K, { dirty: boolean; done: Promise<void> }>()

  constructor(private readonly job: (key: K) => Promise<void>) {}

  /** Resolves after a run that started after this call has finished. */
  request(key: K): Promise<void> {
    const state = this.#states.get(key)
    if (state) {
      state.dirty = true
      return state.done
    }
    const entry = { dirty: false, done: Promise.resolve() }
    entry.done = (async () => {
      try {
        await nextMacrotask()
        do {
          entry.dirty = false
          await this.job(key)
        } while (entry.dirty)
      } finally {
        this.#states.delete(key)
      }
    })()
    this.#states.set(key, entry)
    return entry.done
  }

  /** Waits for every run in flight (and their follow-ups). */
  async idle(): Promise<void> {
    while (this.#states.size > 0) await Promise.allSettled([...this.#states.values()].map((s) => s.done))
  }
}
