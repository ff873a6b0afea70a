// When an instance renews its lease, retries a failed renewal, and gives up on it (fences): the
// geometry that decides how long a database outage may last without costing a session.
//
// The fence ends this instance's agents at (1 - FENCE_MARGIN) of the lease after the last grant.
// An outage that begins just before a renewal is due finds the last grant one interval old, so
// what is left to renew in is (1 - FENCE_MARGIN) × lease - interval, less the pause between the
// last failed attempt and the database's return. With renewals every third of the lease and pauses
// doubling to 1.6 s, giving up once the next pause would cross the fence, that was 8 - 3.3 - 1.6
// ≈ 3 s of a 10 s lease: outages of 3.5 s (PostgreSQL answering again 4.2–5.3 s after the stop)
// fenced both instances in 3 of 4 (test/faults/r14-database-blip.fault.ts). Renewing every sixth of
// the lease and retrying every quarter second up to the fence itself leaves 8 - 1.7 - 0.25 ≈ 6 s:
// an outage of up to half the lease, whenever it begins, costs nothing.

/** Renewals per lease (one statement each, whatever the number of sessions). */
export const RENEWALS_PER_LEASE = 6
/** The server ends its own agents this far (a share of the lease) before its lease could expire. */
export const FENCE_MARGIN = 0.2
/** The watchdog ends them this far before, when the server itself could not (stalled): later than the server would. */
export const WATCHDOG_MARGIN = 0.1
/** Pauses between renewal attempts after a failure (the last repeats), each cut short by the fence. */
export const RENEWAL_RETRY_MS = [50, 100, 250] as const
/** The last pause is at most this share of the lease, so short leases keep the same margin. */
const RETRY_SHARE = 1 / 40

/** A lease's `n`th, never under 50 ms. */
const everyNth = (leaseMs: number, n: number): number => Math.max(50, Math.floor(leaseMs / n))

export function renewalIntervalMs(leaseMs: number): number {
  return everyNth(leaseMs, RENEWALS_PER_LEASE)
}

/**
 * Heartbeats per lease on SQLite (exclusive). The sixth above is the fence's geometry, and there
 * is no fence there: the file's lock proves no other instance exists, so the lease here is always
 * valid, the watchdog gets no deadline, and a row that lapsed anyway (a heartbeat missed while
 * another process held the write lock) is taken anew with nothing ended. A heartbeat's statements
 * (the renewal, and the takeover check until no other instance is left: session-ownership.ts) cost
 * a few ms of CPU each through Prisma: at a sixth of the default lease, about 3 ms/s of an idle
 * server. Every half lease still keeps the row current while heartbeats succeed.
 */
export const EXCLUSIVE_RENEWALS_PER_LEASE = 2

/** The heartbeat's interval: a sixth of the lease, or (exclusive) a half. */
export function heartbeatIntervalMs(leaseMs: number, exclusive: boolean): number {
  return everyNth(leaseMs, exclusive ? EXCLUSIVE_RENEWALS_PER_LEASE : RENEWALS_PER_LEASE)
}

/** The pause before the next attempt after `attempt` (0-based) failed, `leftMs` before the fence; undefined: the fence is due. */
export function renewalRetryMs(attempt: number, leftMs: number, leaseMs: number): number | undefined {
  if (leftMs <= 0) return undefined
  const step = RENEWAL_RETRY_MS[Math.min(attempt, RENEWAL_RETRY_MS.length - 1)]!
  return Math.min(step, Math.max(1, Math.floor(leaseMs * RETRY_SHARE)), leftMs)
}

/** The longest database outage that no phase of the renewal cycle turns into a fence. */
export function toleratedOutageMs(leaseMs: number): number {
  return leaseMs * (1 - FENCE_MARGIN) - renewalIntervalMs(leaseMs) - renewalRetryMs(RENEWAL_RETRY_MS.length, leaseMs, leaseMs)!
}
