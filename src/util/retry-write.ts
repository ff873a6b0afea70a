import type { Scheduler } from './scheduler.ts'

/**
 * Backoff between attempts of a failed store write: about 11 s in all. A reset connection recovers
 * within the first pauses; the rest outlasts what the session's owner survives without a write (a
 * PostgreSQL outage up to 80 % of the default 10 s lease, fault test R14) and a SQLite file another
 * process locks for seconds (R16), so none of the agent's writes is dropped in either. (The old
 * 5.3 s gave up inside outages the lease itself survived.)
 */
export const WRITE_RETRY_DELAYS_MS: readonly number[] = [50, 250, 500, ...Array<number>(10).fill(1000)]

/**
 * Runs a write again after each delay while it fails; the last failure is thrown. Only for writes
 * that are safe to repeat (updates of known rows), never for inserts under a fresh id.
 */
export async function retryWrite<T>(
  write: () => Promise<T>,
  options: {
    scheduler: Scheduler
    onRetry: (error: unknown, attempt: number) => void
    delaysMs?: readonly number[]
    /** False: thrown at once (a refusal that a retry cannot change). */
    retryable?: (error: unknown) => boolean
  },
): Promise<T> {
  const delays = options.delaysMs ?? WRITE_RETRY_DELAYS_MS
  for (let attempt = 0; ; attempt++) {
    try {
      return await write()
    } catch (error) {
      const delay = delays[attempt]
      if (delay === undefined || options.retryable?.(error) === false) throw error
      options.onRetry(error, attempt + 1)
      await new Promise<void>((resolve) => options.scheduler.setTimeout(resolve, delay))
    }
  }
}
