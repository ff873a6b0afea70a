import { describe, expect, it } from 'vitest'
import {
  applyMessageRead,
  applyMessageUpdates,
  deleteMessage,
  FrameBatch,
  initialSessionsState,
  replaceTranscript,
  updateMembership,
  upsertMessage,
} from '../../packages/client/src/sessions-store.ts'
import type { Message, MessageUpdate, SessionsState } from '../../packages/client/src/index.ts'
import { harness, message, sessionEvent, sessionInfo, settle } from './harness.ts'

/** Sessions s1 (messages m1 v1, m2 v1) and s2 (n1 v1). */
function twoSessions(): SessionsState {
  let s = updateMembership(initialSessionsState(), ['s1', 's2'], [])
  s = replaceTranscript(s, 's1', sessionInfo('s1'), [message('m1', 's1', 1), message('m2', 's1', 1)], true)
  s = replaceTranscript(s, 's2', sessionInfo('s2'), [message('n1', 's2', 1)], true)
  return s
}

/** A MessageUpdated of `m` (its other fields at `version`) appending `text` at `offset`; null `text`: a null append. */
function update(id: string, sessionId: string, version: number, offset: number, text: string | null, extra: Partial<Message> = {}): MessageUpdate {
  const { content: _content, permissionOptions: _options, toolCall: _toolCall, ...fields } = message(id, sessionId, version, '', extra)
  return { message: fields, append: text === null ? null : { offset, text } }
}

describe('session store reducers', () => {
  it('a frame of updates changes only the affected session arrays and message objects', () => {
    const before = twoSessions()
    const { state: after, gaps } = applyMessageUpdates(before, [update('m2', 's1', 2, 2, ' more')])
    expect(gaps).toEqual([])
    expect(after.byId.s1!.messages.m2!.content).toBe('v1 more')
    expect(after.byId.s1!.messages.m1).toBe(before.byId.s1!.messages.m1) // untouched message keeps identity
    expect(after.byId.s1!.messageIds).toBe(before.byId.s1!.messageIds) // no id added: same array
    expect(after.byId.s2).toBe(before.byId.s2) // untouched session keeps identity
  })

  // Held: m1 at version 3 with content 'stored' (6 code units).
  const held = () => upsertMessage(twoSessions(), message('m1', 's1', 3, 'stored', { status: 'IN_PROGRESS' }))

  it.each([
    { name: 'a newer version', version: 4 },
    { name: 'the same version (the next slice of one append)', version: 3 },
    { name: 'an older version (the copy came from a newer read)', version: 2 },
  ])('an append whose offset is the length held is applied whatever its version: $name', ({ version }) => {
    const before = held()
    const { state, gaps } = applyMessageUpdates(before, [update('m1', 's1', version, 6, ' + more', { status: 'COMPLETED' })])
    expect(gaps).toEqual([])
    const m1 = state.byId.s1!.messages.m1!
    expect(m1.content).toBe('stored + more')
    expect(m1.version).toBe(Math.max(3, version))
    // The other fields come from the frame unless the copy is newer than it.
    expect(m1.status).toBe(version >= 3 ? 'COMPLETED' : 'IN_PROGRESS')
  })

  it.each([
    { name: 'ends before the length held', offset: 2, text: 'or' },
    { name: 'ends exactly at the length held', offset: 3, text: 'red' },
    { name: 'is empty and inside the copy', offset: 4, text: '' },
  ])('an append that $name is in the copy already: ignored, no read', ({ offset, text }) => {
    const before = held()
    for (const version of [2, 3, 4]) {
      const { state, gaps } = applyMessageUpdates(before, [update('m1', 's1', version, offset, text)])
      expect(state).toBe(before)
      expect(gaps).toEqual([])
    }
  })

  it.each([
    { name: 'starts past the length held (text missed)', offset: 7, text: 'x' },
    { name: 'starts inside the copy and ends past it', offset: 4, text: 'red!' },
    { name: 'is null, from a newer version', offset: 0, text: null, version: 4 },
  ])('an update that $name is a gap: nothing applied, that message is to be read', ({ offset, text, version = 4 }) => {
    const before = held()
    const { state, gaps } = applyMessageUpdates(before, [update('m1', 's1', version, offset, text)])
    expect(state).toBe(before)
    expect(gaps).toEqual([{ sessionId: 's1', messageId: 'm1', version }])
  })

  it('a null append of a version the copy holds already (or older) is ignored; an update of a message not held is a gap', () => {
    const before = held()
    expect(applyMessageUpdates(before, [update('m1', 's1', 3, 0, null), update('m1', 's1', 2, 0, null)])).toEqual({ state: before, gaps: [] })
    const { state, gaps } = applyMessageUpdates(before, [update('m9', 's2', 1, 0, 'x')])
    expect(state).toBe(before)
    expect(gaps).toEqual([{ sessionId: 's2', messageId: 'm9', version: 1 }])
  })

  it('several gaps of one message in a frame are one read, at the newest version; each message with a gap is read', () => {
    const { gaps } = applyMessageUpdates(held(), [update('m1', 's1', 5, 0, null), update('m2', 's1', 2, 9, 'x'), update('m1', 's1', 7, 0, null), update('m1', 's1', 6, 0, null)])
    expect(gaps).toEqual([
      { sessionId: 's1', messageId: 'm1', version: 7 },
      { sessionId: 's1', messageId: 'm2', version: 2 },
    ])
  })

  it('an update of a message created before the transcript\'s oldest one (outside its window of newest messages) is dropped, not read', () => {
    let before = updateMembership(initialSessionsState(), ['s1'], [])
    before = replaceTranscript(before, 's1', sessionInfo('s1'), [message('m5', 's1', 1, 'v1', { createdAt: '2026-01-02T00:00:00.000Z' })], true)
    const old = (id: string, createdAt: string) => ({ ...update(id, 's1', 2, 0, null), message: { ...update(id, 's1', 2, 0, null).message, createdAt } })
    expect(applyMessageUpdates(before, [old('m1', '2026-01-01T00:00:00.000Z')])).toEqual({ state: before, gaps: [] })
    // Created at or after it: a message the transcript should hold, so it is read.
    expect(applyMessageUpdates(before, [old('m6', '2026-01-02T00:00:00.000Z')]).gaps).toEqual([{ sessionId: 's1', messageId: 'm6', version: 2 }])
  })

  it('a one-message read replaces the copy when newer (or the same version with more content), else changes nothing', () => {
    const before = held()
    expect(applyMessageRead(before, message('m1', 's1', 2, 'older'))).toBe(before)
    expect(applyMessageRead(before, message('m1', 's1', 3, 'sto'))).toBe(before)
    expect(applyMessageRead(before, message('m1', 's1', 3, 'stored and more')).byId.s1!.messages.m1!.content).toBe('stored and more')
    const after = applyMessageRead(before, message('m1', 's1', 9, 'rewritten', { status: 'COMPLETED' }))
    expect(after.byId.s1!.messages.m1).toMatchObject({ content: 'rewritten', version: 9, status: 'COMPLETED' })
    expect(after.byId.s1!.messageIds).toBe(before.byId.s1!.messageIds) // held already: same order, same array
    expect(after.byId.s1!.messages.m2).toBe(before.byId.s1!.messages.m2)
    expect(after.byId.s2).toBe(before.byId.s2)
    expect(applyMessageRead(before, message('x', 'gone', 1))).toBe(before) // a session no longer visible
  })

  it('a one-message read of a message not held places it by creation time, unless it is older than the transcript', () => {
    const at = (day: number) => ({ createdAt: `2026-01-0${day}T00:00:00.000Z` })
    let before = updateMembership(initialSessionsState(), ['s1'], [])
    before = replaceTranscript(before, 's1', sessionInfo('s1'), [message('a', 's1', 1, 'a', at(2)), message('c', 's1', 1, 'c', at(4))], true)
    const inserted = applyMessageRead(before, message('b', 's1', 1, 'b', at(3)))
    expect(inserted.byId.s1!.messageIds).toEqual(['a', 'b', 'c'])
    expect(inserted.byId.s1!.messages.b!.content).toBe('b')
    expect(applyMessageRead(inserted, message('d', 's1', 1, 'd', at(4))).byId.s1!.messageIds).toEqual(['a', 'b', 'c', 'd'])
    expect(applyMessageRead(before, message('z', 's1', 1, 'z', at(1)))).toBe(before)
  })

  it.each([
    { stored: 3, incoming: 2, applied: false },
    { stored: 3, incoming: 3, applied: false },
    { stored: 3, incoming: 4, applied: true },
  ])('a whole message: stored version $stored, incoming version $incoming → applied: $applied', ({ stored, incoming, applied }) => {
    const base = upsertMessage(twoSessions(), message('m1', 's1', stored, 'stored'))
    const after = upsertMessage(base, message('m1', 's1', incoming, 'event'))
    expect(after.byId.s1!.messages.m1!.content).toBe(applied ? 'event' : 'stored')
    if (!applied) expect(after).toBe(base)
  })

  it('a whole message of the version held with more content (a read of an append in slices) replaces the copy', () => {
    const base = upsertMessage(twoSessions(), message('m1', 's1', 3, 'part'))
    expect(upsertMessage(base, message('m1', 's1', 3, 'part and rest')).byId.s1!.messages.m1!.content).toBe('part and rest')
    const read = replaceTranscript(base, 's1', sessionInfo('s1'), [message('m1', 's1', 3, 'part and rest')], false)
    expect(read.byId.s1!.messages.m1!.content).toBe('part and rest')
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
    expect(applyMessageUpdates(before, [update('x', 'gone', 1, 0, 'x')])).toEqual({ state: before, gaps: [] })
  })

  it('FrameBatch joins the contiguous appends of a message (newest fields), keeps the others in order, first-key order', () => {
    const batch = new FrameBatch()
    expect(batch.add(update('a', 's1', 2, 2, 'x'))).toBe(true)
    expect(batch.add(update('b', 's1', 2, 0, 'y'))).toBe(false)
    batch.add(update('a', 's1', 2, 3, 'yz')) // a slice of the same version
    batch.add(update('a', 's1', 3, 5, '!', { status: 'COMPLETED' }))
    batch.add(update('a', 's1', 5, 9, 'gap')) // does not continue: kept apart
    batch.add(update('a', 's2', 1, 0, 'other session')) // same id in another session is another key
    expect(batch.take().map((u) => `${u.message.sessionId}/${u.message.id}@${u.message.version} ${u.message.status} ${JSON.stringify(u.append)}`)).toEqual([
      's1/a@3 COMPLETED {"offset":2,"text":"xyz!"}',
      's1/a@5 IN_PROGRESS {"offset":9,"text":"gap"}',
      's1/b@2 IN_PROGRESS {"offset":0,"text":"y"}',
      's2/a@1 IN_PROGRESS {"offset":0,"text":"other session"}',
    ])
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

  it('applies every append of a frame (slices sharing a version) in one notification, by offset', async () => {
    const { h, sub1, sub2, notifications } = await joined()
    const before = h.client.sessions.getState()
    // m2 holds 'v1'; 40 slices of version 2, then one of version 3: each continues the one before.
    let content = 'v1'
    for (let i = 0; i < 40; i++) {
      sub1.next(sessionEvent.updated(message('m2', 's1', 2), { offset: content.length, text: `<${i}>` }))
      content += `<${i}>`
    }
    sub1.next(sessionEvent.updated(message('m2', 's1', 3, '', { status: 'COMPLETED' }), { offset: content.length, text: '.' }))
    sub1.next(sessionEvent.updated(message('m2', 's1', 2), { offset: 2, text: '<0>' })) // already held: ignored
    sub2.next(sessionEvent.updated(message('n1', 's2', 2), { offset: 2, text: ' and more' }))
    expect(h.framesRequested).toBe(1)
    expect(notifications()).toBe(0) // nothing applied before the frame
    h.runFrames()
    expect(notifications()).toBe(1)
    const after = h.client.sessions.getState()
    expect(after.byId.s1!.messages.m2).toMatchObject({ content: `${content}.`, version: 3, status: 'COMPLETED' })
    expect(after.byId.s2!.messages.n1!.content).toBe('v1 and more')
    expect(after.byId.s1!.messages.m1).toBe(before.byId.s1!.messages.m1)
    expect(h.socket.named('ClientSessionMessages')).toHaveLength(0) // no gap, no read
  })

  it('the slices of one version arriving over several frames are all applied', async () => {
    const { h, sub1 } = await joined()
    sub1.next(sessionEvent.updated(message('m1', 's1', 2), { offset: 2, text: 'a'.repeat(16_384) }))
    h.runFrames()
    sub1.next(sessionEvent.updated(message('m1', 's1', 2), { offset: 16_386, text: 'b' }))
    h.runFrames()
    expect(h.client.sessions.getState().byId.s1!.messages.m1!.content).toBe(`v1${'a'.repeat(16_384)}b`)
  })

  it('an append that ends within the copy (a MessageAdded newer than it) is ignored at the flush', async () => {
    const { h, sub1 } = await joined()
    sub1.next(sessionEvent.added(message('m9', 's1', 5, 'five')))
    sub1.next(sessionEvent.updated(message('m9', 's1', 4), { offset: 2, text: 've' }))
    h.runFrames()
    expect(h.client.sessions.getState().byId.s1!.messages.m9!.content).toBe('five')
    expect(h.socket.named('ClientSessionMessages')).toHaveLength(0)
  })

  it('a gap (an append past the copy, or a null append) reads that message alone, once, and never the session', async () => {
    const { h, sub1 } = await joined()
    sub1.next(sessionEvent.updated(message('m1', 's1', 3), { offset: 5, text: 'later' })) // 'v1' is 2 long: text missed
    sub1.next(sessionEvent.updated(message('m2', 's1', 2))) // null append: the content changed
    sub1.next(sessionEvent.updated(message('m2', 's1', 2))) // the same gap twice: one read
    h.runFrames()
    await settle()
    expect(h.socket.named('ClientSessionMessages')).toHaveLength(0)
    const reads = h.socket.named('ClientMessage')
    expect(reads.map((r) => r.variables)).toEqual([
      { sessionId: 's1', id: 'm1' },
      { sessionId: 's1', id: 'm2' },
    ])
    expect(h.client.sessions.getState().byId.s1!.messages.m1!.content).toBe('v1') // nothing applied meanwhile
    const before = h.client.sessions.getState()
    reads[0]!.reply({ session: { id: 's1', message: message('m1', 's1', 3, 'v1 and later') } })
    reads[1]!.reply({ session: { id: 's1', message: message('m2', 's1', 2, 'rewritten') } })
    await settle()
    const after = h.client.sessions.getState()
    expect(after.byId.s1!.messages.m1!.content).toBe('v1 and later')
    expect(after.byId.s1!.messages.m2!.content).toBe('rewritten')
    expect(after.byId.s2).toBe(before.byId.s2)
    expect(h.socket.named('ClientMessage')).toHaveLength(2) // answered at the versions the gaps named: no second read
    // Appends continue from the copy the read brought.
    sub1.next(sessionEvent.updated(message('m1', 's1', 4), { offset: 'v1 and later'.length, text: '!' }))
    h.runFrames()
    await settle()
    expect(h.client.sessions.getState().byId.s1!.messages.m1!.content).toBe('v1 and later!')
    expect(h.socket.named('ClientMessage')).toHaveLength(2)
    expect(h.client.tableSizes().messageReads).toBe(0)
  })

  it('a gap of a newer version while the read is in flight reads once more only if the answer predates it', async () => {
    const { h, sub1 } = await joined()
    sub1.next(sessionEvent.updated(message('m1', 's1', 3)))
    h.runFrames()
    await settle()
    sub1.next(sessionEvent.updated(message('m1', 's1', 6))) // in flight: noted, not sent
    h.runFrames()
    await settle()
    expect(h.socket.named('ClientMessage')).toHaveLength(1)
    h.socket.pending('ClientMessage').reply({ session: { id: 's1', message: message('m1', 's1', 5, 'five') } })
    await settle()
    expect(h.client.sessions.getState().byId.s1!.messages.m1!.content).toBe('five')
    // Version 5 predates the gap of version 6: one more read, and that answer ends it.
    expect(h.socket.named('ClientMessage')).toHaveLength(2)
    h.socket.pending('ClientMessage').reply({ session: { id: 's1', message: message('m1', 's1', 6, 'six') } })
    await settle()
    expect(h.client.sessions.getState().byId.s1!.messages.m1!.content).toBe('six')
    expect(h.socket.named('ClientMessage')).toHaveLength(2)
    expect(h.client.tableSizes().messageReads).toBe(0)
  })

  it('a message deleted while its read is in flight stays deleted; a message gone from the server is left to its MessageDeleted', async () => {
    const { h, sub1 } = await joined()
    sub1.next(sessionEvent.updated(message('m1', 's1', 3)))
    sub1.next(sessionEvent.updated(message('m2', 's1', 3)))
    h.runFrames()
    await settle()
    sub1.next(sessionEvent.deleted('s1', 'm1'))
    const [m1, m2] = h.socket.named('ClientMessage')
    m1!.reply({ session: { id: 's1', message: message('m1', 's1', 3, 'read before the delete') } })
    m2!.reply({ session: { id: 's1', message: null } })
    await settle()
    const entry = h.client.sessions.getState().byId.s1!
    expect(entry.messageIds).toEqual(['m2'])
    expect(entry.messages.m1).toBeUndefined()
    expect(entry.messages.m2!.content).toBe('v1')
    expect(h.client.tableSizes().messageReads).toBe(0)
  })

  it.each(['added', 'deleted', 'turnCompleted'] as const)('%s is a barrier: the pending frame is applied first, then the event', async (kind) => {
    const { h, sub1, notifications } = await joined()
    sub1.next(sessionEvent.updated(message('m1', 's1', 2), { offset: 2, text: ' streamed' }))
    const seen: string[] = []
    h.client.sessions.subscribe((s) => seen.push(`${s.byId.s1!.messages.m1?.content}|${s.byId.s1!.messageIds.join(',')}`))
    if (kind === 'added') sub1.next(sessionEvent.added(message('m3', 's1', 1, 'added')))
    if (kind === 'deleted') sub1.next(sessionEvent.deleted('s1', 'm1'))
    if (kind === 'turnCompleted') sub1.next(sessionEvent.turnCompleted('s1'))
    // The update was applied before the barrier's own change, without waiting for the frame.
    expect(seen[0]).toBe('v1 streamed|m1,m2')
    if (kind === 'added') expect(seen[1]).toBe('v1 streamed|m1,m2,m3')
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
