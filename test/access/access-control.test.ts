// AccessControl on its own: the cached callers (an injected clock, no sleeps), the events that
// end holders, the race of an event with a check in flight, and the re-check after a pub/sub gap.
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { AccessControl, type AccessEnd } from '../../src/access/access-control.ts'
import { hashToken } from '../../src/auth/tokens.ts'
import { createMemoryPubSub } from '../../src/pubsub/memory.ts'
import type { Principal } from '../../src/store/users.ts'

function harness() {
  let now = 0
  const principals = new Map<string, Principal>()
  const members = new Set<string>()
  let lookups = 0
  let memberReads = 0
  let gate: Promise<void> | undefined
  const pubsub = createMemoryPubSub()
  const access = new AccessControl({
    pubsub,
    logger: pino({ level: 'silent' }),
    now: () => now,
    cacheMs: 5_000,
    lookup: async (tokenHash) => {
      lookups++
      await gate
      return principals.get(tokenHash) ?? null
    },
    isMember: async (userId, workspaceId) => {
      memberReads++
      await gate
      return members.has(`${userId} ${workspaceId}`)
    },
  })
  const issue = (userId: string, token: string) => principals.set(hashToken(token), { userId, isAdmin: false, tokenHash: hashToken(token) })
  return {
    access,
    pubsub,
    issue,
    revokeAll: (userId: string) => {
      for (const [hash, p] of principals) if (p.userId === userId) principals.delete(hash)
    },
    members,
    advance: (ms: number) => (now += ms),
    get lookups() {
      return lookups
    },
    get memberReads() {
      return memberReads
    },
    hold: (until: Promise<void>) => (gate = until),
  }
}

const ended = () => {
  const whys: AccessEnd[] = []
  return { whys, end: (why: AccessEnd) => whys.push(why) }
}

describe('AccessControl', () => {
  it('reads a caller once and trusts it for cacheMs, then reads it again', async () => {
    const h = harness()
    h.issue('u1', 'tok')
    expect((await h.access.principal('tok'))?.userId).toBe('u1')
    expect((await h.access.principal('tok'))?.userId).toBe('u1')
    expect(h.lookups).toBe(1)
    h.advance(5_001)
    await h.access.principal('tok')
    expect(h.lookups).toBe(2)
    await h.access.principal('tok', { fresh: true })
    expect(h.lookups).toBe(3)
  })

  it('a revocation drops the user’s cached callers at once, except the token it keeps', async () => {
    const h = harness()
    h.issue('u1', 'old')
    h.issue('u1', 'new')
    await h.access.principal('old')
    await h.access.principal('new')
    h.revokeAll('u1')
    h.issue('u1', 'new')
    h.access.apply({ type: 'credentials-revoked', userId: 'u1', keepTokenHash: hashToken('new') })
    expect(await h.access.principal('old')).toBeNull()
    const before = h.lookups
    expect((await h.access.principal('new'))?.userId).toBe('u1')
    expect(h.lookups).toBe(before) // still cached
  })

  it('a caller read while a revocation is applied is not cached', async () => {
    const h = harness()
    h.issue('u1', 'tok')
    let release!: () => void
    h.hold(new Promise<void>((r) => (release = r)))
    const reading = h.access.principal('tok')
    h.access.apply({ type: 'credentials-revoked', userId: 'u1' })
    release()
    expect((await reading)?.userId).toBe('u1') // what the database said when asked
    h.hold(Promise.resolve())
    h.revokeAll('u1')
    expect(await h.access.principal('tok')).toBeNull() // not served from a cache filled by the racing read
  })

  it('ends the holders an event names, once, and keeps the others', () => {
    const h = harness()
    const socketOld = ended()
    const socketNew = ended()
    const inA = ended()
    const inB = ended()
    const other = ended()
    h.access.hold({ userId: 'u1', tokenHash: 'old', end: socketOld.end })
    h.access.hold({ userId: 'u1', tokenHash: 'new', end: socketNew.end })
    h.access.hold({ userId: 'u1', tokenHash: 'new', workspaceId: 'A', end: inA.end })
    h.access.hold({ userId: 'u1', tokenHash: 'new', workspaceId: 'B', end: inB.end })
    h.access.hold({ userId: 'u2', tokenHash: 'x', workspaceId: 'A', end: other.end })
    h.access.apply({ type: 'membership-removed', userId: 'u1', workspaceId: 'A' })
    h.access.apply({ type: 'membership-removed', userId: 'u1', workspaceId: 'A' })
    expect([inA.whys, inB.whys, other.whys]).toEqual([['membership'], [], []])
    h.access.apply({ type: 'credentials-revoked', userId: 'u1', keepTokenHash: 'new' })
    expect([socketOld.whys, socketNew.whys, inB.whys]).toEqual([['credentials'], [], []])
    expect(h.access.heldCount).toBe(3)
  })

  it('a holder registered after an event it should have seen (its check was older) ends at once', () => {
    const h = harness()
    const since = h.access.generation
    h.access.apply({ type: 'membership-removed', userId: 'u1', workspaceId: 'A' })
    const late = ended()
    const unrelated = ended()
    h.access.hold({ userId: 'u1', workspaceId: 'A', end: late.end }, since)
    h.access.hold({ userId: 'u1', workspaceId: 'B', end: unrelated.end }, since)
    expect([late.whys, unrelated.whys]).toEqual([['membership'], []])
    expect(h.access.heldCount).toBe(1)
  })

  it('release frees the entry, and a released holder is never ended', () => {
    const h = harness()
    const holder = ended()
    const release = h.access.hold({ userId: 'u1', tokenHash: 't', end: holder.end })
    release()
    h.access.apply({ type: 'credentials-revoked', userId: 'u1' })
    expect(holder.whys).toEqual([])
    expect(h.access.heldCount).toBe(0)
  })

  it('after a pub/sub gap, forgets every cached caller and ends the holders the database no longer allows', async () => {
    const h = harness()
    h.issue('u1', 'kept')
    h.issue('u2', 'gone')
    h.members.add('u1 A')
    await h.access.principal('kept')
    const stillMember = ended()
    const removedMember = ended()
    const revokedToken = ended()
    h.access.hold({ userId: 'u1', tokenHash: hashToken('kept'), workspaceId: 'A', end: stillMember.end })
    h.access.hold({ userId: 'u1', tokenHash: hashToken('kept'), workspaceId: 'B', end: removedMember.end })
    h.access.hold({ userId: 'u2', tokenHash: hashToken('gone'), end: revokedToken.end })
    h.revokeAll('u2')
    const before = h.lookups
    h.access.apply({ type: 'resync' })
    await expect.poll(() => h.access.heldCount, { timeout: 2_000 }).toBe(1)
    expect([stillMember.whys, removedMember.whys, revokedToken.whys]).toEqual([[], ['membership'], ['credentials']])
    await h.access.principal('kept')
    expect(h.lookups).toBeGreaterThan(before + 2) // re-checked, and the cache was dropped
  })

  it('follows the events other instances publish', async () => {
    const h = harness()
    h.access.start()
    const holder = ended()
    h.access.hold({ userId: 'u1', workspaceId: 'A', end: holder.end })
    await h.pubsub.publish('access', 'all', { type: 'membership-removed', userId: 'u1', workspaceId: 'A' })
    await expect.poll(() => holder.whys, { timeout: 2_000 }).toEqual(['membership'])
    await h.access.stop()
  })

  describe('memberships', () => {
    it('reads a membership once and trusts it for cacheMs; a refusal is read again every time', async () => {
      const h = harness()
      h.members.add('u1 w1')
      expect(await h.access.isMember('u1', 'w1')).toBe(true)
      expect(await h.access.isMember('u1', 'w1')).toBe(true)
      expect(h.memberReads).toBe(1)
      h.advance(5_001)
      expect(await h.access.isMember('u1', 'w1')).toBe(true)
      expect(h.memberReads).toBe(2)
      // Not a member: asked again each time, so one added since gets in at once.
      expect(await h.access.isMember('u2', 'w1')).toBe(false)
      h.members.add('u2 w1')
      expect(await h.access.isMember('u2', 'w1')).toBe(true)
      expect(h.memberReads).toBe(4)
    })

    it('a membership-removed event (here or from another instance) and a pub/sub gap drop it at once', async () => {
      const h = harness()
      h.access.start()
      h.members.add('u1 w1').add('u1 w2')
      await h.access.isMember('u1', 'w1')
      await h.access.isMember('u1', 'w2')
      h.members.delete('u1 w1')
      await h.access.publish({ type: 'membership-removed', userId: 'u1', workspaceId: 'w1' })
      expect(await h.access.isMember('u1', 'w1')).toBe(false)
      expect(await h.access.isMember('u1', 'w2')).toBe(true) // another workspace's stays cached
      expect(h.memberReads).toBe(3)
      h.members.delete('u1 w2')
      h.access.apply({ type: 'resync' })
      expect(await h.access.isMember('u1', 'w2')).toBe(false)
      await h.access.stop()
    })

    it('a read in flight when a removal is applied is answered but not kept', async () => {
      const h = harness()
      h.members.add('u1 w1')
      let release = () => undefined as void
      h.hold(new Promise<void>((resolve) => (release = resolve)))
      const inFlight = h.access.isMember('u1', 'w1')
      h.access.apply({ type: 'membership-removed', userId: 'u1', workspaceId: 'w1' })
      release()
      expect(await inFlight).toBe(true) // what it read may predate the removal
      h.members.delete('u1 w1')
      expect(await h.access.isMember('u1', 'w1')).toBe(false)
      expect(h.memberReads).toBe(2)
    })
  })
})
