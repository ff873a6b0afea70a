import { describe, expect, it } from 'vitest'
import { harness, message, sessionEvent } from './harness.ts'

/** What the graphql-ws clients were asked: sessionEvents subscribes and their cleanups. */
function counts(h: ReturnType<typeof harness>) {
  const ops = h.sockets.flatMap((s) => s.named('ClientSessionEvents'))
  return {
    subscribed: ops.map((o) => o.variables.sessionId as string),
    unsubscribed: ops.filter((o) => o.unsubscribed).map((o) => o.variables.sessionId as string),
  }
}

describe('setVisibleSessions: membership diff', () => {
  it('subscribes the sessions newly present and completes the ones gone', () => {
    const h = harness()
    h.client.setVisibleSessions(['a', 'b'])
    expect(counts(h)).toEqual({ subscribed: ['a', 'b'], unsubscribed: [] })
    h.client.setVisibleSessions(['b', 'c'])
    expect(counts(h)).toEqual({ subscribed: ['a', 'b', 'c'], unsubscribed: ['a'] })
    expect(Object.keys(h.client.sessions.getState().byId).sort()).toEqual(['b', 'c'])
    h.client.setVisibleSessions([])
    expect(counts(h).unsubscribed.sort()).toEqual(['a', 'b', 'c'])
    expect(h.client.sessions.getState().byId).toEqual({})
  })

  it('the same set again, as new arrays in another order, does nothing at all', () => {
    const h = harness()
    h.client.setVisibleSessions(['a', 'b'])
    const sub = h.socket.live('ClientSessionEvents')[0]!
    sub.next(sessionEvent.joined('a', [message('m1', 'a', 1)]))
    const state = h.client.sessions.getState()
    let notifications = 0
    h.client.sessions.subscribe(() => notifications++)
    for (const ids of [['b', 'a'], ['a', 'b'], ['a', 'a', 'b'], [...['b', 'a']]]) h.client.setVisibleSessions(ids)
    expect(counts(h)).toEqual({ subscribed: ['a', 'b'], unsubscribed: [] })
    expect(h.socket.operations).toHaveLength(2) // no snapshot read, no other request
    expect(notifications).toBe(0)
    expect(h.client.sessions.getState()).toBe(state)
  })

  it('while disconnected it only records the set; the next socket subscribes exactly the visible ones', async () => {
    const h = harness()
    h.client.setVisibleSessions(['a', 'b'])
    h.socket.close(1006)
    h.client.setVisibleSessions(['b', 'c'])
    expect(h.sockets).toHaveLength(1)
    await h.clock.advance(30_000)
    h.socket.ack()
    expect(h.sockets[1]!.named('ClientSessionEvents').map((o) => o.variables.sessionId)).toEqual(['b', 'c'])
  })

  it('a session that left is not touched by its late events', () => {
    const h = harness()
    h.client.setVisibleSessions(['a'])
    const sub = h.socket.live('ClientSessionEvents')[0]!
    h.client.setVisibleSessions([])
    sub.next(sessionEvent.joined('a', [message('m1', 'a', 1)]))
    expect(h.client.sessions.getState().byId).toEqual({})
  })
})
