import type { Scheduler } from '../util/scheduler.ts'

/** Backoff between attempts of a failed store write: a busy SQLite or a reset Postgres connection usually recovers within these. */
export const WRITE_RETRY_DELAYS_MS = [50, 250, 1000, 4000] as const

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
