import { describe, expect, it } from 'vitest'
import { backoffMs, toWebSocketUrl } from '../../packages/client/src/socket-policy.ts'
import { harness, message, openBooted, sessionEvent, settle, taskRow } from './harness.ts'

describe('reconnect with jittered exponential backoff', () => {
  it('backoffMs is min(30 s, 500 ms · 2^n) · (0.5 + random())', () => {
    expect([0, 1, 2, 3, 6, 10].map((n) => backoffMs(n, () => 0.5))).toEqual([500, 1000, 2000, 4000, 30_000, 30_000])
    expect(backoffMs(0, () => 0)).toBe(250)
    expect(backoffMs(2, () => 0.999)).toBe(Math.round(2000 * 1.499))
  })

  it('the URL becomes ws(s), and the token goes in connection_init', () => {
    expect(toWebSocketUrl('http://h:4000/graphql')).toBe('ws://h:4000/graphql')
    expect(toWebSocketUrl('https://h/graphql')).toBe('wss://h/graphql')
    expect(toWebSocketUrl('ws://h/graphql')).toBe('ws://h/graphql')
    const h = harness()
    expect(h.socket.options).toMatchObject({ url: 'ws://example.test/graphql', connectionParams: { authorization: 'Bearer secret' }, retryAttempts: 0, lazy: false })
  })

  it.each([1006, 1013, 1001, 4500])('after a %i close it opens a new socket once the jittered delay has passed', async (code) => {
    const randoms = [0.1, 0.9, 0.3]
    const h = harness({ random: () => randoms.shift() ?? 0.5 })
    h.socket.close(code)
    expect(h.client.connection.getState()).toMatchObject({ status: 'reconnecting', lastCloseCode: code, reconnects: 0 })
    // Never: 500 · 0.6 = 300 ms.
    await h.clock.advance(299)
    expect(h.sockets).toHaveLength(1)
    await h.clock.advance(1)
    expect(h.sockets).toHaveLength(2)
    // The new socket fails before its ack: the next delay doubles (1000 · 1.4).
    h.socket.close(1006)
    await h.clock.advance(1399)
    expect(h.sockets).toHaveLength(2)
    await h.clock.advance(1)
    expect(h.sockets).toHaveLength(3)
    h.socket.ack()
    expect(h.client.connection.getState()).toMatchObject({ status: 'connected', reconnects: 1, lastCloseCode: 1006 })
    expect(h.diagnostics).toContainEqual({ type: 'connected', reconnect: true })
    expect(h.diagnostics).toContainEqual({ type: 'closed', code, reason: '', willRetry: true })
  })

  it('a connection that stayed up resets the backoff; one that drops at once does not', async () => {
    const h = harness()
    for (const expected of [500, 1000, 2000]) {
      h.socket.close(1013)
      expect(h.clock.delays).toEqual([expected])
      await h.clock.advance(expected)
      h.socket.ack() // acknowledged, then dropped again at once
    }
    await h.clock.advance(10_000) // stable for 10 s
    h.socket.close(1013)
    expect(h.clock.delays).toEqual([500])
  })

  it('a socket that stops answering pings is ended and replaced; one that answers stays', async () => {
    const h = harness()
    expect(h.socket.options.keepAlive).toBe(15_000)
    h.socket.pingSent()
    await h.clock.advance(4_000)
    h.socket.pongReceived()
    await h.clock.advance(10_000)
    expect(h.socket.terminated).toBe(false)
    h.socket.pingSent() // never answered
    await h.clock.advance(5_000)
    expect(h.sockets[0]!.terminated).toBe(true)
    expect(h.client.connection.getState()).toMatchObject({ status: 'reconnecting', lastCloseCode: 4499 })
    await h.clock.advance(500)
    expect(h.sockets).toHaveLength(2)
  })

  it.each([4401, 4403])('a %i close (token refused) stops retrying and the connection is closed', async (code) => {
    const h = harness({ ack: false })
    const viewer = h.client.viewer()
    h.socket.close(code)
    expect(h.client.connection.getState()).toMatchObject({ status: 'closed', lastCloseCode: code })
    await expect(viewer).rejects.toMatchObject({ code: 'CLOSED', message: `The server refused the token (WebSocket close ${code}).` })
    await h.clock.advance(120_000)
    expect(h.sockets).toHaveLength(1)
    expect(h.clock.pending).toBe(0)
    await expect(h.client.openWorkspace('ws-1')).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('never reconnects after dispose', async () => {
    const h = harness()
    h.socket.close(1006)
    h.client.dispose()
    await h.clock.advance(120_000)
    expect(h.sockets).toHaveLength(1)
    expect(h.client.connection.getState().status).toBe('closed')
    const late = harness()
    late.client.dispose()
    late.socket.close(1000) // the close dispose() caused
    await late.clock.advance(120_000)
    expect(late.sockets).toHaveLength(1)
  })

  it('re-subscribes only the visible sessions, each with a fresh snapshot that replaces its messages, and resumes the feed', async () => {
    const h = harness()
    const feed = await openBooted(h, 'ws-1', 'c0', [taskRow('a', 'A', null)])
    feed.next({ workspaceEvents: { __typename: 'TaskDeleted', cursor: 'c1', taskId: 'zz', workspaceId: 'ws-1' } })
    h.client.setVisibleSessions(['s1', 's2'])
    const [s1] = h.socket.live('ClientSessionEvents')
    s1!.next(sessionEvent.joined('s1', [message('m1', 's1', 1), message('m2', 's1', 4, 'kept newer')]))
    expect(h.client.sessions.getState().byId.s1!.joined).toBe(true)
    h.client.setVisibleSessions(['s1'])
    h.socket.close(1013)
    expect(h.client.sessions.getState().byId.s1!.joined).toBe(false)
    await h.clock.advance(30_000)
    h.socket.ack()
    const again = h.socket.live('ClientSessionEvents')
    expect(again.map((o) => o.variables)).toEqual([{ sessionId: 's1' }])
    expect(h.socket.live('ClientWorkspaceEvents').map((o) => o.variables)).toEqual([{ workspaceId: 'ws-1', after: 'c1' }])
    again[0]!.next(sessionEvent.joined('s1', [message('m2', 's1', 3, 'older'), message('m3', 's1', 1)]))
    const entry = h.client.sessions.getState().byId.s1!
    expect(entry.joined).toBe(true)
    expect(entry.messageIds).toEqual(['m2', 'm3'])
    expect(entry.messages.m2!.content).toBe('kept newer')
    await settle()
  })
})
