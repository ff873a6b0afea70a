// The lease as a fence (MAPPING "Outages and stalls"): a failed renewal is retried up to the
// fence, so a database outage of up to half the lease ends nothing, whenever it begins in the
// renewal cycle (src/instances/lease-timing.ts); with no renewal in time the
// agents here end a fifth of the lease before it could expire, and the watchdog is told a later
// deadline for when this process could not do it itself; on SQLite the lease never ends the
// server's own sessions. Real SQLite; the database failures are injected (failing-store.ts),
// and both clocks (the lease's monotonic one, the store's wall clock) move by hand.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { manualTimers } from '../support/manual-timers.ts'
import { failingStore } from '../agents/failing-store.ts'
import { eventually } from '../support/wait.ts'
import { InstanceLease, type LeaseHooks } from '../../src/instances/instance-lease.ts'
import { FENCE_MARGIN, RENEWAL_RETRY_MS, toleratedOutageMs } from '../../src/instances/lease-timing.ts'

const LEASE = 10_000

describe('the lease as a fence', () => {
  let w: ProjectorWorld
  beforeEach(async () => {
    w = await projectorWorld('sqlite')
  })
  afterEach(() => w?.close())

  function leaseWith(options: { exclusive?: boolean } = {}) {
    const timers = manualTimers()
    const db = failingStore(w.store.db)
    const store = { ...db.store, now: w.clock.now }
    const calls: string[] = []
    const deadlines: (number | null)[] = []
    const hooks: LeaseHooks = {
      runningSessions: () => [],
      abandon: async () => void calls.push('abandon'),
      leaseLost: async () => void calls.push(`leaseLost@${timers.now}`),
      recoverOwned: async () => void calls.push('recoverOwned'),
      afterRenewal: async () => void calls.push('afterRenewal'),
    }
    const lease = new InstanceLease('me', {
      store,
      logger: pino({ level: 'silent' }),
      leaseMs: LEASE,
      hooks,
      timers: timers.timers,
      monotonic: () => timers.now,
      deadlines: { deadline: (ms) => void deadlines.push(ms) },
      exclusive: options.exclusive,
    })
    /** Both clocks move together; timers due on the way fire. */
    const advance = (ms: number) => {
      w.clock.advance(ms)
      timers.advance(ms)
    }
    /** Runs a heartbeat, moving time in small steps while the renewal waits between attempts, until it is done. */
    async function tickThrough(): Promise<void> {
      let done = false
      const pass = lease.tick().finally(() => (done = true))
      const fenceOnly = timers.pendingCount
      while (!done) {
        // The pass waits on a pause between attempts (one more timer pending) or is done.
        await eventually(() => done || timers.pendingCount > fenceOnly, 5000)
        if (!done) advance(RENEWAL_RETRY_MS[0])
      }
      await pass
    }
    return { lease, db, calls, deadlines, advance, tickThrough, timers }
  }

  it('a renewal that fails is retried inside the lease: a blip ends nothing', async () => {
    const { lease, db, calls, deadlines, advance, tickThrough, timers } = leaseWith()
    await lease.register()
    // Each grant tells the watchdog: gone a tenth of the lease before it expires.
    expect(deadlines).toEqual([LEASE - LEASE / 10])
    advance(lease.intervalMs)
    db.fail({ model: 'serverInstance', method: 'updateMany', times: 2 })
    await tickThrough()
    expect(db.failed).toEqual(['serverInstance.updateMany', 'serverInstance.updateMany'])
    expect(calls).toEqual(['afterRenewal'])
    expect(lease.valid).toBe(true)
    expect(deadlines).toHaveLength(2)
    expect(deadlines[1]).toBe(LEASE - LEASE / 10)
    // Past the first grant's fence: the renewal (after two retries) moved it on.
    advance(LEASE * (1 - FENCE_MARGIN) - timers.now + 100)
    expect(calls).toEqual(['afterRenewal'])
  })

  it('an outage of up to half the lease ends nothing, even when it begins just before a renewal is due', async () => {
    const { lease, db, calls, advance, tickThrough, timers } = leaseWith()
    expect(toleratedOutageMs(LEASE)).toBeGreaterThanOrEqual(LEASE / 2)
    await lease.register()
    // The worst phase: the last grant is a whole interval old when the database goes away.
    advance(lease.intervalMs - 1)
    const back = timers.now + toleratedOutageMs(LEASE)
    db.fail({ model: 'serverInstance', method: 'updateMany', times: 1_000_000, when: () => timers.now < back })
    advance(1)
    await tickThrough()
    expect(timers.now).toBeGreaterThanOrEqual(back)
    expect(calls).toEqual(['afterRenewal'])
    expect(lease.valid).toBe(true)
    // And so on: the next renewals hold it.
    for (let i = 0; i < 6; i++) {
      advance(lease.intervalMs)
      await tickThrough()
    }
    expect(calls.filter((c) => c.startsWith('leaseLost'))).toEqual([])
  })

  it('with no renewal in time the agents end a fifth of the lease before it could expire; a later renewal recovers what they left', async () => {
    const { lease, db, calls, advance, tickThrough, timers } = leaseWith()
    await lease.register()
    db.fail({ model: 'serverInstance', method: 'updateMany', times: 1_000_000 })
    advance(lease.intervalMs)
    // Retries up to the fence, a fifth of the lease before it expires, by this process's own clock; then the pass gives up.
    await tickThrough()
    expect(calls).toEqual([`leaseLost@${LEASE * 0.8}`])
    expect(db.failed.length).toBeGreaterThan(20)
    expect(timers.now).toBeLessThan(LEASE * 0.8 + RENEWAL_RETRY_MS[0] + 1)
    expect(lease.valid).toBe(true)
    // The database is back before the lease ran out: it renews, and the sessions' open work is recovered.
    db.lift()
    advance(LEASE * 0.1)
    await tickThrough()
    expect(calls).toEqual([`leaseLost@${LEASE * 0.8}`, 'recoverOwned', 'afterRenewal'])
    expect(lease.valid).toBe(true)
  })

  it('on SQLite (exclusive) the lease never ends the server’s own sessions, however late or failing its renewals', async () => {
    const { lease, db, calls, deadlines, advance, tickThrough } = leaseWith({ exclusive: true })
    await lease.register()
    expect(deadlines).toEqual([null])
    // A starved process: three leases pass before the next heartbeat runs.
    advance(3 * LEASE)
    expect(lease.valid).toBe(true)
    await tickThrough()
    expect(calls).toEqual([])
    expect(lease.valid).toBe(true)
    db.fail({ model: 'serverInstance', method: 'updateMany', times: 1000 })
    advance(3 * LEASE)
    await tickThrough()
    expect(calls).toEqual([])
    expect(lease.valid).toBe(true)
  })
})
