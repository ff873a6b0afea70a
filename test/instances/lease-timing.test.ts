// The lease's timing (src/instances/lease-timing.ts, issue 44 item 2): renewals often enough and
// retries close enough together that a database outage of up to half the lease, whenever it
// begins in the renewal cycle, ends before the fence, for every SESSION_LEASE_MS allowed.
import { describe, expect, it } from 'vitest'
import { FENCE_MARGIN, heartbeatIntervalMs, renewalIntervalMs, renewalRetryMs, toleratedOutageMs, WATCHDOG_MARGIN } from '../../src/instances/lease-timing.ts'

const LEASES = [300, 1000, 2000, 3000, 10_000, 60_000, 3_600_000]

describe('lease timing', () => {
  it('tolerates an outage of half the lease, whatever the lease', () => {
    for (const lease of LEASES) expect(toleratedOutageMs(lease), `SESSION_LEASE_MS ${lease}`).toBeGreaterThanOrEqual(lease / 2)
    // The default: about six seconds of a ten-second lease.
    expect(toleratedOutageMs(10_000)).toBeGreaterThan(6000)
  })

  it('renews six times a lease; retries after 50, 100, then every 250 ms, never past the fence', () => {
    expect(renewalIntervalMs(10_000)).toBe(1666)
    expect([0, 1, 2, 3, 9].map((attempt) => renewalRetryMs(attempt, 5000, 10_000))).toEqual([50, 100, 250, 250, 250])
    expect(renewalRetryMs(5, 120, 10_000)).toBe(120)
    expect(renewalRetryMs(5, 0, 10_000)).toBeUndefined()
    // A short lease retries as often, relative to its length.
    expect(renewalRetryMs(5, 500, 1000)).toBe(25)
  })

  it('beats every sixth of the lease, and on SQLite (exclusive, no fence) every half', () => {
    expect(heartbeatIntervalMs(10_000, false)).toBe(renewalIntervalMs(10_000))
    expect(heartbeatIntervalMs(10_000, true)).toBe(5000)
    expect(heartbeatIntervalMs(300, true)).toBe(150)
  })

  it('ends agents here before the watchdog would, and both before the lease expires', () => {
    expect(FENCE_MARGIN).toBeGreaterThan(WATCHDOG_MARGIN)
    expect(WATCHDOG_MARGIN).toBeGreaterThan(0)
  })
})
