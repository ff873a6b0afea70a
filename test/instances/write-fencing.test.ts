// Fencing in the store (MAPPING "Outages and stalls"): every write an agent's runtime makes goes
// through a store bound to its instance (ownedBy), and is conditional, in the write itself, on
// that instance still owning the session. Once another instance has claimed the session, a
// resumed stale owner's writes are refused (OwnershipLostError) and change nothing. Real
// PostgreSQL, two connections as two instances.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { randomUUID } from 'node:crypto'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { ownedBy, OwnershipLostError, type Store } from '../../src/store/store.ts'
import { clearSessionError, setSessionError, updateSession } from '../../src/store/sessions.ts'
import { insertMessage, updateMessage } from '../../src/store/messages.ts'
import { appendMessageContent, wholeContents } from '../../src/store/message-content.ts'
import { closeTurn, markPromptDispatched, startTurn } from '../../src/store/turns.ts'
import { claimSession } from '../../src/store/instances.ts'

describe('writes fenced by session ownership (postgres)', () => {
  let w: ProjectorWorld
  let other: Store
  beforeEach(async () => {
    w = await projectorWorld('postgres')
    other = (await w.otherInstance()).store
  })
  afterEach(() => w?.close())

  /** A session owned by A with an open turn and a streaming message, as A's runtime leaves it mid-turn. */
  async function streamingOnA() {
    const task = await w.newTask()
    const sessionId = await w.newSession(task.id, { state: 'RUNNING' })
    await w.store.db.session.update({ where: { id: sessionId }, data: { ownerInstanceId: 'A' } })
    const turn = await startTurn(w.store, { sessionId })
    const a = ownedBy(w.store, 'A')
    const message = await insertMessage(a, { id: randomUUID(), sessionId, turnId: turn.id, author: 'AGENT', kind: 'MESSAGE', content: 'partial', status: 'IN_PROGRESS' })
    await appendMessageContent(a, message.id, ' more')
    return { a, sessionId, turnId: turn.id, messageId: message.id }
  }

  const snapshot = async (sessionId: string) => ({
    session: await w.store.db.session.findUniqueOrThrow({ where: { id: sessionId } }),
    turns: await w.store.db.turn.findMany({ where: { sessionId }, orderBy: { startedAt: 'asc' } }),
    messages: await wholeContents(w.store, await w.store.db.message.findMany({ where: { sessionId }, orderBy: { createdAt: 'asc' } })),
    // A refused append leaves no chunk behind either.
    chunks: await w.store.db.messageChunk.findMany({ where: { message: { sessionId } }, orderBy: [{ messageId: 'asc' }, { seq: 'asc' }] }),
  })

  it('while A owns the session its fenced writes land', async () => {
    const { a, sessionId, turnId, messageId } = await streamingOnA()
    await updateSession(a, sessionId, { activeSubagentCount: 1 })
    await closeTurn(a, turnId, { stopReason: 'end_turn', interrupted: false })
    const after = await snapshot(sessionId)
    expect(after.messages.find((m) => m.id === messageId)).toMatchObject({ content: 'partial more', status: 'COMPLETED' })
    expect(after.session.activeSubagentCount).toBe(1)
    expect(after.turns[0]!.completedAt).not.toBeNull()
  })

  it('once B has claimed it, every write of the stale owner A is refused and changes nothing', async () => {
    const { a, sessionId, turnId, messageId } = await streamingOnA()
    const queued = await startTurn(w.store, { sessionId })
    await setSessionError(w.store, sessionId, { code: 'x', message: 'earlier', stamp: 's1', occurredAt: w.clock.now() })
    expect(await claimSession(other, sessionId, 'B', 'A')).toBe(true)
    const before = await snapshot(sessionId)

    const refusals = await Promise.allSettled([
      insertMessage(a, { id: randomUUID(), sessionId, turnId, author: 'AGENT', kind: 'MESSAGE', content: 'late', status: 'IN_PROGRESS' }),
      appendMessageContent(a, messageId, ' late'),
      updateMessage(a, messageId, { status: 'COMPLETED' }),
      updateSession(a, sessionId, { state: 'WAITING_FOR_INPUT', activeSubagentCount: 3 }),
      setSessionError(a, sessionId, { code: 'agent_crashed', message: 'late', stamp: 's2', occurredAt: w.clock.now() }),
      clearSessionError(a, sessionId),
      markPromptDispatched(a, queued.id),
      closeTurn(a, turnId, { stopReason: 'end_turn', interrupted: false }),
    ])
    for (const outcome of refusals) {
      expect(outcome.status).toBe('rejected')
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(OwnershipLostError)
    }
    expect(await snapshot(sessionId)).toEqual(before)
    // The new owner's writes go on.
    await appendMessageContent(ownedBy(other, 'B'), messageId, ' by B')
    expect((await snapshot(sessionId)).messages.find((m) => m.id === messageId)?.content).toBe('partial more by B')
  })
})
