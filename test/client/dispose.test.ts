import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { harness, message, openBooted, sessionEvent, settle, taskRow } from './harness.ts'

/** Node reports an unhandled rejection only after a macrotask turn: take a few. */
async function rejectionsReported() {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
}

describe('dispose and promise hygiene', () => {
  const rejections: unknown[] = []
  const record = (reason: unknown) => rejections.push(reason)
  beforeEach(() => {
    rejections.length = 0
    process.on('unhandledRejection', record)
  })
  afterEach(() => {
    process.off('unhandledRejection', record)
  })

  it('completes every subscription, settles every call and frees every table', async () => {
    const h = harness()
    const feed = await openBooted(h, 'ws-1', 'c0', [taskRow('a', 'A', null)])
    h.client.setVisibleSessions(['s1', 's2'])
    const sessions = h.socket.live('ClientSessionEvents')
    sessions[0]!.next(sessionEvent.joined('s1', [message('m1', 's1', 1)]))
    sessions[1]!.next(sessionEvent.resync('s2')) // a refetch is in flight
    sessions[0]!.next(sessionEvent.updated(message('m1', 's1', 2))) // a frame is pending
    expect(h.client.tableSizes().pendingUpdates).toBe(1)
    const viewer = h.client.viewer()
    const sending = h.client.sendMessage({ taskId: 't', sessionId: 's1', content: 'x' })
    await settle()

    h.client.dispose()
    expect([feed, ...sessions].every((o) => o.unsubscribed)).toBe(true)
    expect(h.socket.disposed).toBe(true)
    await expect(viewer).rejects.toMatchObject({ code: 'CLOSED' })
    await expect(sending).resolves.toEqual({ outcome: 'unknown', clientMessageId: 'web-id-1' })
    await settle()
    expect(Object.values(h.client.tableSizes()).every((n) => n === 0)).toBe(true)
    expect(h.clock.pending).toBe(0)
    expect(h.client.sessions.getState().byId).toEqual({})
    expect(h.client.connection.getState().status).toBe('closed')
    h.runFrames() // a frame requested before dispose does nothing
    expect(h.client.sessions.getState().byId).toEqual({})
    await expect(h.client.viewer()).rejects.toMatchObject({ code: 'CLOSED' })
    h.client.setVisibleSessions(['s3'])
    expect(h.socket.named('ClientSessionEvents')).toHaveLength(2)
    await rejectionsReported()
    expect(rejections).toEqual([])
  })

  it('background work that fails (row reads, refetches, resync boots) rejects nothing unhandled', async () => {
    const h = harness()
    const feed = await openBooted(h, 'ws-1', 'c0', [])
    h.client.setVisibleSessions(['s1'])
    h.socket.live('ClientSessionEvents')[0]!.next(sessionEvent.resync('s1'))
    feed.next({ workspaceEvents: { __typename: 'TaskStatusSummaryUpdated', cursor: 'c1', taskId: 'x', workspaceId: 'ws-1', summary: { revision: 1 } } })
    await settle()
    h.socket.pending('ClientSessionMessages').fail('FORBIDDEN')
    h.socket.pending('ClientTaskRow').fail('INTERNAL_SERVER_ERROR')
    feed.next({ workspaceEvents: { __typename: 'WorkspaceResync', cursor: null, workspaceId: 'ws-1', reason: 'cursor-expired' } })
    await settle()
    h.socket.pending('ClientBoot').fail('FORBIDDEN')
    await settle()
    expect(h.client.summaries.getState().status).toBe('idle')
    h.client.setVisibleSessions(['s1', 's2'])
    h.socket.close(1006) // everything in flight is cut off
    h.client.dispose()
    await h.clock.advance(60_000)
    await rejectionsReported()
    expect(rejections).toEqual([])
  })
})
