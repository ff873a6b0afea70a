import { describe, expect, it } from 'vitest'
import {
  applyMessageUpdates,
  deleteMessage,
  FrameBatch,
  initialSessionsState,
  replaceTranscript,
  updateMembership,
  upsertMessage,
} from '../../src/client/sessions-store.ts'
import type { SessionsState } from '../../src/client/index.ts'
import { harness, message, sessionEvent, sessionInfo, settle } from './harness.ts'

/** Sessions s1 (messages m1 v1, m2 v1) and s2 (n1 v1). */
function twoSessions(): SessionsState {
  let s = updateMembership(initialSessionsState(), ['s1', 's2'], [])
  s = replaceTranscript(s, 's1', sessionInfo('s1'), [message('m1', 's1', 1), message('m2', 's1', 1)], true)
  s = replaceTranscript(s, 's2', sessionInfo('s2'), [message('n1', 's2', 1)], true)
  return s
}

describe('session store reducers', () => {
  it('a frame of updates changes only the affected session arrays and message objects', () => {
    const before = twoSessions()
    const after = applyMessageUpdates(before, [message('m2', 's1', 2, 'more')])
    expect(after.byId.s1!.messages.m2!.content).toBe('more')
    expect(after.byId.s1!.messages.m1).toBe(before.byId.s1!.messages.m1) // untouched message keeps identity
    expect(after.byId.s1!.messageIds).toBe(before.byId.s1!.messageIds) // no id added: same array
    expect(after.byId.s2).toBe(before.byId.s2) // untouched session keeps identity
  })

  it('an update for a message not yet held appends its id (first arrival order)', () => {
    const after = applyMessageUpdates(twoSessions(), [message('m3', 's1', 1), message('m0', 's1', 1)])
    expect(after.byId.s1!.messageIds).toEqual(['m1', 'm2', 'm3', 'm0'])
  })

  it.each([
    { stored: 3, incoming: 2, applied: false },
    { stored: 3, incoming: 3, applied: false },
    { stored: 3, incoming: 4, applied: true },
  ])('stored version $stored, event version $incoming → applied: $applied', ({ stored, incoming, applied }) => {
    const base = upsertMessage(twoSessions(), message('m1', 's1', stored, 'stored'))
    for (const after of [applyMessageUpdates(base, [message('m1', 's1', incoming, 'event')]), upsertMessage(base, message('m1', 's1', incoming, 'event'))]) {
      expect(after.byId.s1!.messages.m1!.content).toBe(applied ? 'event' : 'stored')
      if (!applied) expect(after).toBe(base)
    }
  })

  it('a snapshot replaces the transcript; a held newer version wins; unchanged messages keep identity', () => {
    const base = upsertMessage(twoSessions(), message('m2', 's1', 5, 'newer'))
    const after = replaceTranscript(base, 's1', sessionInfo('s1'), [message('m1', 's1', 1), message('m2', 's1', 3, 'older'), message('m4', 's1', 1)], true)
    expect(after.byId.s1!.messageIds).toEqual(['m1', 'm2', 'm4'])
    expect(after.byId.s1!.messages.m2!.content).toBe('newer')
    expect(after.byId.s1!.messages.m1).toBe(base.byId.s1!.messages.m1)
    expect(after.byId.s2).toBe(base.byId.s2)
  })

  it('deleting a message removes its id and object', () => {
    const after = deleteMessage(twoSessions(), 's1', 'm1')
    expect(after.byId.s1!.messageIds).toEqual(['m2'])
    expect(after.byId.s1!.messages.m1).toBeUndefined()
  })

  it('updates for sessions not in the store are dropped', () => {
    const before = twoSessions()
    expect(applyMessageUpdates(before, [message('x', 'gone', 1)])).toBe(before)
  })

  it('FrameBatch keeps the newest version per message in first-key order', () => {
    const batch = new FrameBatch()
    expect(batch.add(message('a', 's1', 1))).toBe(true)
    expect(batch.add(message('b', 's1', 1))).toBe(false)
    batch.add(message('a', 's1', 3, 'a3'))
    batch.add(message('a', 's1', 2, 'a2')) // older than the queued one: ignored
    batch.add(message('a', 's2', 1)) // same id in another session is another key
    expect(batch.take().map((m) => `${m.sessionId}/${m.id}@${m.version}`)).toEqual(['s1/a@3', 's1/b@1', 's2/a@1'])
    expect(batch.size).toBe(0)
  })
})

describe('message frame batching through the client', () => {
  async function joined() {
    const h = harness()
    h.client.setVisibleSessions(['s1', 's2'])
    const [sub1, sub2] = h.socket.live('ClientSessionEvents')
    sub1!.next(sessionEvent.joined('s1', [message('m1', 's1', 1), message('m2', 's1', 1)]))
    sub2!.next(sessionEvent.joined('s2', [message('n1', 's2', 1)]))
    let notifications = 0
    h.client.sessions.subscribe(() => notifications++)
    return { h, sub1: sub1!, sub2: sub2!, notifications: () => notifications }
  }

  it('keeps only the newest MessageUpdated per message in a frame and applies the frame in one notification', async () => {
    const { h, sub1, sub2, notifications } = await joined()
    const before = h.client.sessions.getState()
    for (let v = 2; v <= 40; v++) sub1.next(sessionEvent.updated(message('m2', 's1', v, `m2 v${v}`)))
    sub1.next(sessionEvent.updated(message('m2', 's1', 10, 'stale'))) // older than the frame's newest
    sub1.next(sessionEvent.updated(message('m3', 's1', 1, 'new one')))
    sub2.next(sessionEvent.updated(message('n1', 's2', 2, 'n1 v2')))
    expect(h.framesRequested).toBe(1)
    expect(notifications()).toBe(0) // nothing applied before the frame
    h.runFrames()
    expect(notifications()).toBe(1)
    const after = h.client.sessions.getState()
    expect(after.byId.s1!.messages.m2!.content).toBe('m2 v40')
    expect(after.byId.s1!.messageIds).toEqual(['m1', 'm2', 'm3'])
    expect(after.byId.s2!.messages.n1!.content).toBe('n1 v2')
    expect(after.byId.s1!.messages.m1).toBe(before.byId.s1!.messages.m1)
  })

  it('an update older than the stored message is ignored at the flush', async () => {
    const { h, sub1 } = await joined()
    sub1.next(sessionEvent.added(message('m9', 's1', 5, 'five')))
    sub1.next(sessionEvent.updated(message('m9', 's1', 4, 'four')))
    h.runFrames()
    expect(h.client.sessions.getState().byId.s1!.messages.m9!.content).toBe('five')
  })

  it.each(['added', 'deleted', 'turnCompleted'] as const)('%s is a barrier: the pending frame is applied first, then the event', async (kind) => {
    const { h, sub1, notifications } = await joined()
    sub1.next(sessionEvent.updated(message('m1', 's1', 2, 'streamed')))
    const seen: string[] = []
    h.client.sessions.subscribe((s) => seen.push(`${s.byId.s1!.messages.m1?.content}|${s.byId.s1!.messageIds.join(',')}`))
    if (kind === 'added') sub1.next(sessionEvent.added(message('m3', 's1', 1, 'added')))
    if (kind === 'deleted') sub1.next(sessionEvent.deleted('s1', 'm1'))
    if (kind === 'turnCompleted') sub1.next(sessionEvent.turnCompleted('s1'))
    // The update was applied before the barrier's own change, without waiting for the frame.
    expect(seen[0]).toBe('streamed|m1,m2')
    if (kind === 'added') expect(seen[1]).toBe('streamed|m1,m2,m3')
    if (kind === 'deleted') expect(seen[1]).toBe('undefined|m2')
    const count = notifications()
    h.runFrames() // the frame finds nothing left to apply
    expect(notifications()).toBe(count)
  })

  it('SessionJoined without a snapshot changes nothing; SessionStateChanged updates the session info', async () => {
    const { h, sub1, notifications } = await joined()
    const before = h.client.sessions.getState()
    sub1.next(sessionEvent.joined('s1', null))
    expect(h.client.sessions.getState()).toBe(before)
    expect(notifications()).toBe(0)
    sub1.next(sessionEvent.stateChanged(sessionInfo('s1', { state: 'RUNNING' })))
    expect(h.client.sessions.getState().byId.s1!.session?.state).toBe('RUNNING')
    expect(h.client.sessions.getState().byId.s1!.messages).toBe(before.byId.s1!.messages)
  })

  it('SessionResync refetches the session and replaces its transcript', async () => {
    const { h, sub1 } = await joined()
    sub1.next(sessionEvent.resync('s1'))
    await settle()
    const read = h.socket.pending('ClientSessionMessages')
    expect(read.variables).toEqual({ id: 's1', last: 100 })
    read.reply({ session: { ...sessionInfo('s1', { state: 'RUNNING' }), messages: [message('m2', 's1', 7, 'fresh'), message('m5', 's1', 1)] } })
    await settle()
    const entry = h.client.sessions.getState().byId.s1!
    expect(entry.messageIds).toEqual(['m2', 'm5'])
    expect(entry.messages.m2!.content).toBe('fresh')
    expect(entry.session?.state).toBe('RUNNING')
  })
})
