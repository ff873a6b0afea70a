// One WebSocket connection's subscriptions and a membership removed behind the API's back: the
// instance's re-check ends the subscriptions in that workspace through the same hook a
// removeWorkspaceMember event uses (endSubscription → FORBIDDEN), the socket and its other
// subscriptions go on, and closing the socket frees every entry and timer. Injected clock, no sleeps.
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { AccessControl } from '../../src/access/access-control.ts'
import { hashToken } from '../../src/auth/tokens.ts'
import { ConnectionAccess } from '../../src/delivery/connection-access.ts'
import { createMemoryPubSub } from '../../src/pubsub/memory.ts'
import { manualTimers } from '../support/manual-timers.ts'

const BOUND_MS = 5_000

function connection() {
  const clock = manualTimers()
  const members = new Set(['u1 A', 'u1 B'])
  let memberReads = 0
  const access = new AccessControl({
    pubsub: createMemoryPubSub(),
    logger: pino({ level: 'silent' }),
    now: () => clock.now,
    timers: clock.timers,
    cacheMs: BOUND_MS,
    lookup: async (tokenHash) => (tokenHash === hashToken('tok') ? { userId: 'u1', isAdmin: false, tokenHash } : null),
    isMember: async (userId, workspaceId) => {
      memberReads++
      return members.has(`${userId} ${workspaceId}`)
    },
  })
  const ended: string[] = []
  const closes: string[] = []
  const socket = new ConnectionAccess(access, {
    closeRevoked: () => closes.push('revoked'),
    closeNow: () => closes.push('now'),
    endSubscription: (id) => ended.push(id),
    timers: clock.timers,
  })
  /** A subscription started as operation-start.ts and ws-gateway.ts start it. */
  const subscribe = async (id: string, workspaceId: string) => {
    const since = socket.generation
    expect(await access.isMember('u1', workspaceId)).toBe(true) // the resolver's check
    socket.subscribing(id, [workspaceId], since)
    socket.subscribed(id)
  }
  const advance = async (ms: number) => {
    for (let moved = 0; moved < ms; moved += 100) {
      clock.advance(100)
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
  }
  return {
    access,
    clock,
    members,
    socket,
    ended,
    closes,
    subscribe,
    advance,
    get memberReads() {
      return memberReads
    },
  }
}

describe('ConnectionAccess and memberships removed without an event', () => {
  it('ends the subscriptions in that workspace with the FORBIDDEN hook within the bound; the socket and the others go on', async () => {
    const c = connection()
    expect(await c.socket.connect('tok')).toBe(true)
    await c.subscribe('a1', 'A')
    await c.subscribe('a2', 'A')
    await c.subscribe('b1', 'B')
    await c.advance(1_000)
    c.members.delete('u1 A')
    await c.advance(BOUND_MS)
    expect(c.ended.sort()).toEqual(['a1', 'a2'])
    expect(c.closes).toEqual([])
    // graphql-ws then reports each as ended (onComplete): nothing is held for them any more.
    c.socket.ended('a1')
    c.socket.ended('a2')
    expect(c.access.heldCount).toBe(2) // the socket's token, b1's workspace
    expect(c.access.rechecks.pairs).toBe(1)
    await c.advance(2 * BOUND_MS)
    expect(c.ended.sort()).toEqual(['a1', 'a2'])
  })

  it('one read per bound for all of a socket’s subscriptions in a workspace', async () => {
    const c = connection()
    await c.socket.connect('tok')
    for (let i = 0; i < 50; i++) await c.subscribe(`s${i}`, 'A')
    const before = c.memberReads
    await c.advance(4 * BOUND_MS)
    expect(c.memberReads - before).toBe(4)
  })

  it('closing the socket frees every entry and the re-check timer', async () => {
    const c = connection()
    await c.socket.connect('tok')
    await c.subscribe('a1', 'A')
    await c.subscribe('b1', 'B')
    expect(c.access.rechecks).toEqual({ pairs: 2, armed: true })
    c.socket.closed()
    expect(c.access.heldCount).toBe(0)
    expect(c.access.rechecks).toEqual({ pairs: 0, armed: false })
    expect(c.clock.pendingCount).toBe(0)
  })
})
