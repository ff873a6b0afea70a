import { describe, expect, it } from 'vitest'
import { SEND_ROUNDS } from '../../packages/client/src/index.ts'
import { harness, message, sessionEvent, sessionInfo, settle } from './harness.ts'

const input = { taskId: 'task-1', sessionId: 's1', content: 'hello' }
const userMessage = (id: string, version = 1) => message(id, 's1', version, 'hello', { author: 'USER', status: null })
const sessionAnswer = (messages: ReturnType<typeof message>[]) => ({ session: { ...sessionInfo('s1'), messages } })

/** Every clientMessageId the client sent addMessage with, across sockets. */
function sentIds(h: ReturnType<typeof harness>) {
  return h.sockets.flatMap((s) => s.named('ClientAddMessage')).map((o) => (o.variables.input as { clientMessageId: string }).clientMessageId)
}

describe('sendMessage', () => {
  it('sends addMessage over the socket with a generated web- id, and stores the answer', async () => {
    const h = harness({ generateId: undefined })
    h.client.setVisibleSessions(['s1'])
    h.socket.live('ClientSessionEvents')[0]!.next(sessionEvent.joined('s1', []))
    const sending = h.client.sendMessage(input)
    const op = h.socket.pending('ClientAddMessage')
    const id = (op.variables.input as { clientMessageId: string }).clientMessageId
    expect(id).toMatch(/^web-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(op.variables).toEqual({ input: { ...input, clientMessageId: id } })
    op.reply({ addMessage: { replayed: false, message: userMessage(id) } })
    await expect(sending).resolves.toEqual({ outcome: 'accepted', message: userMessage(id) })
    expect(h.client.sessions.getState().byId.s1!.messageIds).toEqual([id])
  })

  it('uses the given clientMessageId', async () => {
    const h = harness()
    const sending = h.client.sendMessage({ ...input, clientMessageId: 'mine-1' })
    h.socket.pending('ClientAddMessage').reply({ addMessage: { replayed: true, message: userMessage('mine-1') } })
    await expect(sending).resolves.toMatchObject({ outcome: 'replayed' })
    expect(sentIds(h)).toEqual(['mine-1'])
  })

  it('(a) timed out, but the stream already delivered it: accepted without another request', async () => {
    const h = harness()
    h.client.setVisibleSessions(['s1'])
    const stream = h.socket.live('ClientSessionEvents')[0]!
    stream.next(sessionEvent.joined('s1', []))
    const sending = h.client.sendMessage(input)
    stream.next(sessionEvent.added(userMessage('web-id-1')))
    await h.clock.advance(10_000)
    await expect(sending).resolves.toMatchObject({ outcome: 'accepted', message: { id: 'web-id-1' } })
    expect(h.socket.operations.map((o) => o.name)).toEqual(['ClientSessionEvents', 'ClientAddMessage'])
  })

  it('(b) the socket closed before the answer: the newest messages (after the reconnect) show it was stored', async () => {
    const h = harness()
    const sending = h.client.sendMessage(input)
    h.socket.close(1013)
    await h.clock.advance(500) // the reconnect delay, well within the read's timeout
    h.socket.ack()
    await settle()
    const read = h.socket.pending('ClientSessionMessages')
    expect(read.variables).toEqual({ id: 's1', last: 50 })
    read.reply(sessionAnswer([message('other', 's1', 1), userMessage('web-id-1')]))
    await expect(sending).resolves.toMatchObject({ outcome: 'accepted', message: { id: 'web-id-1' } })
    expect(sentIds(h)).toEqual(['web-id-1'])
  })

  it('(c) not found: addMessage is sent again with the same id, and the replay is reported', async () => {
    const h = harness()
    const sending = h.client.sendMessage(input)
    await h.clock.advance(10_000) // the first answer never comes
    h.socket.pending('ClientSessionMessages').reply(sessionAnswer([]))
    await settle()
    h.socket.pending('ClientAddMessage').reply({ addMessage: { replayed: true, message: userMessage('web-id-1') } })
    await expect(sending).resolves.toMatchObject({ outcome: 'replayed', message: { id: 'web-id-1' } })
    expect(sentIds(h)).toEqual(['web-id-1', 'web-id-1'])
  })

  it(`bounded: after ${SEND_ROUNDS} rounds without an answer the outcome is unknown, with the one id`, async () => {
    const h = harness()
    let outcome: unknown
    void h.client.sendMessage(input).then((r) => (outcome = r))
    for (let i = 0; i < 20 && outcome === undefined; i++) await h.clock.advance(10_000) // nothing is ever answered
    expect(outcome).toEqual({ outcome: 'unknown', clientMessageId: 'web-id-1' })
    expect(sentIds(h)).toEqual(Array(SEND_ROUNDS).fill('web-id-1'))
    expect(h.socket.named('ClientSessionMessages')).toHaveLength(SEND_ROUNDS)
    expect(h.client.tableSizes()['transport.operations']).toBe(0)
  })

  it('rounds wait for the reconnect between them', async () => {
    const h = harness()
    const sending = h.client.sendMessage(input)
    for (let round = 0; round < 2; round++) {
      h.socket.close(1006) // closes before the answer
      await settle()
      const sockets = h.sockets.length
      expect(h.socket.live('ClientSessionMessages')).toHaveLength(0) // the reconciling read waits for a socket
      await h.clock.advance(500 * 2 ** round) // the reconnect delay of this drop
      expect(h.sockets).toHaveLength(sockets + 1)
      h.socket.ack()
      await settle()
      h.socket.pending('ClientSessionMessages').reply(sessionAnswer([]))
      await settle()
    }
    h.socket.pending('ClientAddMessage').reply({ addMessage: { replayed: false, message: userMessage('web-id-1') } })
    await expect(sending).resolves.toMatchObject({ outcome: 'accepted' })
    expect(h.sockets.map((s) => s.named('ClientAddMessage').length)).toEqual([1, 1, 1])
    expect(sentIds(h)).toEqual(['web-id-1', 'web-id-1', 'web-id-1'])
  })

  it('a refusal (not UNAVAILABLE) rejects at once with its code; UNAVAILABLE is retried with the same id', async () => {
    const h = harness()
    const refused = h.client.sendMessage(input)
    h.socket.pending('ClientAddMessage').fail('CONFLICT')
    await expect(refused).rejects.toMatchObject({ code: 'CONFLICT' })
    const retried = h.client.sendMessage({ ...input, clientMessageId: 'again' })
    h.socket.pending('ClientAddMessage').fail('UNAVAILABLE')
    await h.clock.advance(1000)
    h.socket.pending('ClientAddMessage').reply({ addMessage: { replayed: false, message: userMessage('again') } })
    await expect(retried).resolves.toMatchObject({ outcome: 'accepted' })
    expect(sentIds(h)).toEqual(['web-id-1', 'again', 'again'])
  })
})
