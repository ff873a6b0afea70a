// Memberships removed behind the API's back (a database edit, a restore: no event tells the
// server): the open subscriptions relying on one end within the access cache's bound, at one
// read per user/workspace pair per bound however many subscriptions share it, and every entry and
// timer goes with the last of them. Injected clock and timers (manual-timers.ts): no sleeps.
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { AccessControl, type AccessEnd } from '../../src/access/access-control.ts'
import { createMemoryPubSub } from '../../src/pubsub/memory.ts'
import { manualTimers } from '../support/manual-timers.ts'

const BOUND_MS = 5_000

function harness() {
  const clock = manualTimers()
  const members = new Set<string>()
  const reads: { at: number; pair: string }[] = []
  let failing: Error | undefined
  let gate: Promise<void> | undefined
  const logged: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) })
  const access = new AccessControl({
    pubsub: createMemoryPubSub(),
    logger,
    now: () => clock.now,
    timers: clock.timers,
    cacheMs: BOUND_MS,
    lookup: async () => null,
    isMember: async (userId, workspaceId) => {
      reads.push({ at: clock.now, pair: `${userId} ${workspaceId}` })
      await gate
      if (failing) throw failing
      return members.has(`${userId} ${workspaceId}`)
    },
  })
  return {
    access,
    clock,
    members,
    reads,
    logged,
    fail: (error: Error | undefined) => (failing = error),
    /** Reads wait for `until` (a database that has not answered yet). */
    hold: (until: Promise<void> | undefined) => (gate = until),
    /** Moves the clock, letting each read the timers start answer (the fake database answers at once). */
    async advance(ms: number, step = 50) {
      for (let moved = 0; moved < ms; moved += step) {
        clock.advance(Math.min(step, ms - moved))
        await settle()
      }
    },
  }
}

/** Lets promises already resolved run their continuations (no time passes on the injected clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A subscribe as the schema does it: the membership check (cached), then the hold; how and when it ended. */
async function subscribe(h: ReturnType<typeof harness>, userId: string, workspaceId: string) {
  const since = h.access.generation
  expect(await h.access.isMember(userId, workspaceId)).toBe(true)
  const whys: AccessEnd[] = []
  let endedAt: number | undefined
  const end = (why: AccessEnd) => {
    whys.push(why)
    endedAt = h.clock.now
  }
  const release = h.access.hold({ userId, workspaceId, end }, since)
  return { whys, endedAt: () => endedAt, release }
}

describe('membership re-checks of open subscriptions', () => {
  it('ends the subscriptions of a membership deleted without an event within the bound, and only those', async () => {
    const h = harness()
    h.members.add('u1 A').add('u1 B').add('u2 A')
    const inA = [await subscribe(h, 'u1', 'A'), await subscribe(h, 'u1', 'A')]
    const inB = await subscribe(h, 'u1', 'B')
    const otherUser = await subscribe(h, 'u2', 'A')
    await h.advance(2_000)
    h.members.delete('u1 A') // the row deleted in the database: no event
    const removedAt = h.clock.now
    await h.advance(BOUND_MS + 1_000)
    for (const s of inA) {
      expect(s.whys).toEqual(['membership'])
      expect(s.endedAt()! - removedAt).toBeLessThanOrEqual(BOUND_MS)
    }
    expect([inB.whys, otherUser.whys]).toEqual([[], []])
    expect(h.access.heldCount).toBe(2)
    expect(h.access.rechecks.pairs).toBe(2)
    // As an event would: the cached membership is gone too, so the next operation there is refused.
    expect(await h.access.isMember('u1', 'A')).toBe(false)
  })

  it('costs one read per user/workspace pair per bound, however many subscriptions share it', async () => {
    const h = harness()
    h.members.add('u1 A').add('u2 A')
    for (let i = 0; i < 500; i++) await subscribe(h, 'u1', 'A')
    for (let i = 0; i < 500; i++) await subscribe(h, 'u2', 'A')
    expect(h.reads).toHaveLength(2) // the first subscribe of each pair; the rest were served by the cache
    h.reads.length = 0
    await h.advance(6 * BOUND_MS)
    const perPair = (pair: string) => h.reads.filter((r) => r.pair === pair).map((r) => r.at)
    for (const pair of ['u1 A', 'u2 A']) {
      const at = perPair(pair)
      expect(at).toHaveLength(6)
      // Never more often than the bound less the batching slack (a twentieth), never later than the bound.
      for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(BOUND_MS * 0.95)
      for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeLessThanOrEqual(BOUND_MS)
    }
    // Operations in between take the cache the re-checks keep warm: no read of their own.
    expect(await h.access.isMember('u1', 'A')).toBe(true)
    expect(h.reads).toHaveLength(12)
  })

  it('a read an operation made counts: the re-check waits a bound from it', async () => {
    const h = harness()
    h.members.add('u1 A')
    await subscribe(h, 'u1', 'A')
    await h.advance(3_000)
    // A fresh read (as after an access event dropped the cache) at 3 s.
    expect(await h.access.isMember('u1', 'A', { fresh: true })).toBe(true)
    h.reads.length = 0
    await h.advance(4_000) // 7 s: the subscribe's read would have been due at 5 s
    expect(h.reads).toEqual([])
    await h.advance(1_000)
    expect(h.reads.map((r) => r.at)).toEqual([expect.any(Number)])
    expect(h.reads[0]!.at).toBeGreaterThanOrEqual(7_750)
    expect(h.reads[0]!.at).toBeLessThanOrEqual(8_000)
  })

  it('frees the pair and its timer with the last subscription, on every way it ends', async () => {
    const h = harness()
    h.members.add('u1 A').add('u1 B')
    const a1 = await subscribe(h, 'u1', 'A')
    const a2 = await subscribe(h, 'u1', 'A')
    const b = await subscribe(h, 'u1', 'B')
    expect(h.access.rechecks).toEqual({ pairs: 2, armed: true })
    a1.release()
    a1.release() // twice is once
    expect(h.access.rechecks.pairs).toBe(2)
    a2.release()
    expect(h.access.rechecks).toEqual({ pairs: 1, armed: true })
    h.access.apply({ type: 'membership-removed', userId: 'u1', workspaceId: 'B' }) // ended by an event
    expect(b.whys).toEqual(['membership'])
    expect(h.access.rechecks).toEqual({ pairs: 0, armed: false })
    expect(h.clock.pendingCount).toBe(0)
    expect(h.access.heldCount).toBe(0)
    // Found gone by a re-check: the same.
    const c = await subscribe(h, 'u1', 'A')
    h.members.delete('u1 A')
    await h.advance(BOUND_MS)
    expect(c.whys).toEqual(['membership'])
    expect(h.access.rechecks).toEqual({ pairs: 0, armed: false })
    expect(h.clock.pendingCount).toBe(0)
  })

  it('a read in flight when the last subscription goes ends nothing, and arms nothing again', async () => {
    const h = harness()
    h.members.add('u1 A')
    const s = await subscribe(h, 'u1', 'A')
    let answer!: () => void
    h.hold(new Promise<void>((resolve) => (answer = resolve)))
    h.members.delete('u1 A')
    await h.advance(BOUND_MS)
    expect(h.reads.at(-1)).toEqual({ at: BOUND_MS, pair: 'u1 A' })
    s.release()
    answer()
    await settle()
    expect(s.whys).toEqual([])
    expect(h.access.rechecks).toEqual({ pairs: 0, armed: false })
    expect(h.clock.pendingCount).toBe(0)
  })

  it('a database that cannot answer ends nothing: the pair is read again within a second, and the failure logged once', async () => {
    const h = harness()
    h.members.add('u1 A')
    const s = await subscribe(h, 'u1', 'A')
    h.fail(new Error('connection refused'))
    h.reads.length = 0
    await h.advance(BOUND_MS + 3_000)
    expect(s.whys).toEqual([])
    expect(h.reads.length).toBeGreaterThanOrEqual(3) // at ~5 s, then about once a second
    expect(h.reads.length).toBeLessThanOrEqual(5)
    expect(h.logged.filter((l) => l.includes('access.recheck'))).toHaveLength(1)
    // Back, and the membership gone meanwhile: ended at the next retry, not a bound later.
    h.fail(undefined)
    h.members.delete('u1 A')
    await h.advance(1_000)
    expect(s.whys).toEqual(['membership'])
  })

  it('after a pub/sub gap, reads every pair at once, one read per pair however many holders', async () => {
    const h = harness()
    h.members.add('u1 A').add('u2 A')
    for (let i = 0; i < 10; i++) await subscribe(h, 'u1', 'A')
    const gone = [await subscribe(h, 'u2', 'A'), await subscribe(h, 'u2', 'A')]
    h.members.delete('u2 A')
    h.reads.length = 0
    h.access.apply({ type: 'resync' })
    await h.advance(50)
    expect(h.reads.map((r) => r.pair).sort()).toEqual(['u1 A', 'u2 A'])
    expect(gone.map((s) => s.whys)).toEqual([['membership'], ['membership']])
    expect(h.access.heldCount).toBe(10)
  })

  it('stop() leaves no timer behind', async () => {
    const h = harness()
    h.members.add('u1 A')
    await subscribe(h, 'u1', 'A')
    expect(h.clock.pendingCount).toBe(1)
    await h.access.stop()
    expect(h.access.rechecks).toEqual({ pairs: 0, armed: false })
    expect(h.clock.pendingCount).toBe(0)
  })
})
