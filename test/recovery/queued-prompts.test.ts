// The durable prompt queue through recovery, on each provider (issue 32, item 2): a prompt
// accepted behind a turn in flight is stored queued; restart or takeover recovery keeps every
// never-dispatched one open and queued for the session's new owner (and names the sessions
// that have some), closes the attempted turn in flight as interrupted (never re-sent), and
// closes the queued prompts of sessions nobody can run (profile gone, session stopped). The
// dispatch itself is a compare-and-set: a queued prompt is claimed for dispatch once.
import { randomUUID } from 'node:crypto'
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { recoverSessions } from '../../src/recovery/startup-recovery.ts'
import { insertPrompt } from '../../src/store/prompts.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { closeTurn, markPromptDispatched, queuedPrompts } from '../../src/store/turns.ts'
import { OwnershipLostError, ownedBy } from '../../src/store/store.ts'
import { PROVIDERS } from '../support/databases.ts'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { summaryDrift } from '../support/summary-rebuild.ts'

const logger = pino({ level: 'silent' })

describe.each(PROVIDERS)('queued prompts through recovery (%s)', (provider) => {
  let w: ProjectorWorld
  beforeEach(async () => (w = await projectorWorld(provider)))
  afterEach(() => w?.close())

  const prompt = async (sessionId: string, content: string) => {
    w.clock.advance(10)
    const accepted = await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId, content })
    return accepted!.turn
  }

  /**
   * A session of a task of its own, its dead server's agent mid-turn: the turn in flight was
   * dispatched (it may have reached the agent), streams a reply and waits on a permission; the
   * `queued` prompts came after it and were never dispatched.
   */
  async function midTurnWithQueue(state: 'RUNNING' | 'CANCELLED' | 'WAITING_FOR_INPUT', queued: string[]) {
    const task = await w.newTask()
    const sessionId = await w.newSession(task.id, { state, isPrimary: true })
    const inFlight = await prompt(sessionId, 'in flight')
    expect(await markPromptDispatched(w.store, inFlight.id)).toMatchObject({ id: inFlight.id, promptDispatchAttempted: true })
    const reply = await insertMessage(w.store, { id: randomUUID(), sessionId, turnId: inFlight.id, author: 'AGENT', kind: 'MESSAGE', content: 'partial', status: 'IN_PROGRESS' })
    const permission = await insertMessage(w.store, {
      id: randomUUID(), sessionId, turnId: inFlight.id, author: 'AGENT', kind: 'PERMISSION_REQUEST', content: 'may I?', status: 'PENDING', pendingId: randomUUID(), metadata: '{}',
    })
    const waiting = []
    for (const text of queued) waiting.push(await prompt(sessionId, text))
    for (const turn of waiting) expect(turn.queuedAt).not.toBeNull()
    return { taskId: task.id, sessionId, inFlight, reply, permission, queued: waiting }
  }

  const turn = (id: string) => w.store.db.turn.findUniqueOrThrow({ where: { id } })
  const openTurns = (sessionId: string) => w.store.db.turn.count({ where: { sessionId, completedAt: null } })

  it('keeps never-dispatched prompts open and queued, ends the turn in flight interrupted, and closes the queues nobody can run', async () => {
    const running = await midTurnWithQueue('RUNNING', ['one', 'two', 'count'])
    const orphan = await midTurnWithQueue('RUNNING', ['lost'])
    await w.store.db.session.update({ where: { id: orphan.sessionId }, data: { agentProfile: 'gone' } })
    const stopped = await midTurnWithQueue('CANCELLED', ['after stop'])
    // Its agent ended the turn in flight and the server died before dispatching the next one.
    const between = await midTurnWithQueue('WAITING_FOR_INPUT', ['next'])
    await closeTurn(w.store, between.inFlight.id, { stopReason: 'end_turn', interrupted: false })
    expect((await w.summary(running.taskId)).payload.queuedPromptCount).toBe(3)
    expect((await w.summary(orphan.taskId)).payload.queuedPromptCount).toBe(1)

    const dispatch: string[][] = []
    const options = { store: w.store, logger, pubsub: w.pubsub, resumableProfiles: new Set(['mock']), dispatchQueued: (ids: string[]) => dispatch.push(ids) }
    const sessions = [running, orphan, stopped, between].map((s, i) => ({ id: s.sessionId, agentProfile: i === 1 ? 'gone' : 'mock' }))
    const at = w.clock.advance(60_000)
    const result = await recoverSessions(options, sessions, 'SERVER_RESTART')
    expect(result).toMatchObject({ resumed: 1, failed: 1, queuedSessions: 2 })
    // Handed to this instance's dispatcher once, as one set: the sessions whose prompts wait.
    expect(dispatch.map((ids) => [...ids].sort())).toEqual([[running.sessionId, between.sessionId].sort()])

    // The turn in flight may have reached the agent: it ends interrupted (never re-sent), its
    // reply INTERRUPTED, its permission request CANCELLED (nobody can answer it any more).
    expect(await turn(running.inFlight.id)).toMatchObject({ completedAt: at, interrupted: true, interruption: 'SERVER_RESTART', promptDispatchAttempted: true })
    expect((await w.store.db.message.findUniqueOrThrow({ where: { id: running.reply.id } })).status).toBe('INTERRUPTED')
    expect((await w.store.db.message.findUniqueOrThrow({ where: { id: running.permission.id } })).status).toBe('CANCELLED')
    // The prompts behind it still wait, in the order they were accepted, with their text.
    for (const t of running.queued)
      expect(await turn(t.id)).toMatchObject({ completedAt: null, interrupted: false, promptDispatchAttempted: false, queuedAt: t.queuedAt })
    expect(await queuedPrompts(w.store, running.sessionId)).toEqual(running.queued.map((t, i) => ({ turnId: t.id, text: ['one', 'two', 'count'][i] })))
    expect(await queuedPrompts(w.store, between.sessionId)).toEqual([{ turnId: between.queued[0]!.id, text: 'next' }])
    expect((await w.store.db.session.findUniqueOrThrow({ where: { id: running.sessionId } })).state).toBe('WAITING_FOR_INPUT')

    // Nobody can run these: every turn closes, and the count drops.
    for (const s of [orphan, stopped]) {
      expect(await openTurns(s.sessionId)).toBe(0)
      for (const t of s.queued) expect(await turn(t.id)).toMatchObject({ completedAt: at, interrupted: true })
    }
    expect((await w.store.db.session.findUniqueOrThrow({ where: { id: orphan.sessionId } })).state).toBe('FAILED')
    expect((await w.store.db.session.findUniqueOrThrow({ where: { id: stopped.sessionId } })).state).toBe('CANCELLED')

    // The count is derived from the stored queue: exact after recovery, and equal to a rebuild.
    expect((await w.summary(running.taskId)).payload.queuedPromptCount).toBe(3)
    expect((await w.summary(between.taskId)).payload.queuedPromptCount).toBe(1)
    expect((await w.summary(orphan.taskId)).payload.queuedPromptCount).toBe(0)
    expect((await w.summary(stopped.taskId)).payload.queuedPromptCount).toBe(0)
    expect(await summaryDrift(w.store, [running.taskId, between.taskId, orphan.taskId, stopped.taskId])).toEqual([])

    // A second restart before anything was dispatched: the same prompts still wait, nothing else closes.
    const again = await recoverSessions(options, sessions.slice(0, 1), 'SERVER_RESTART')
    expect(again).toMatchObject({ closedTurns: 0, queuedSessions: 1 })
    expect(await openTurns(running.sessionId)).toBe(3)
  })

  it('a prompt queued before the cut and dispatched after it answers the interruption (MAPPING: the newest dispatched turn is no longer the cut one)', async () => {
    const s = await midTurnWithQueue('RUNNING', ['next'])
    const options = { store: w.store, logger, pubsub: w.pubsub, resumableProfiles: new Set(['mock']), dispatchQueued: () => undefined }
    const at = w.clock.advance(60_000)
    await recoverSessions(options, [{ id: s.sessionId, agentProfile: 'mock' }], 'SERVER_RESTART')
    expect((await w.summary(s.taskId)).payload.interruption).toEqual({ sessionId: s.sessionId, reason: 'SERVER_RESTART', at: at.toISOString() })
    // A relaunch (a lifecycle-only turn) answers nothing; the queued prompt going out does.
    w.clock.advance(10)
    await markPromptDispatched(w.store, s.queued[0]!.id)
    expect((await w.summary(s.taskId)).payload.interruption).toBeNull()
    expect(await summaryDrift(w.store, [s.taskId])).toEqual([])
  })

  it('a queued prompt is claimed for dispatch once: a second claim (another runtime, a later owner) gets nothing, a stale owner is refused', async () => {
    const s = await midTurnWithQueue('RUNNING', ['one'])
    await closeTurn(w.store, s.inFlight.id, { stopReason: 'end_turn', interrupted: false })
    const queued = s.queued[0]!
    await w.store.db.session.update({ where: { id: s.sessionId }, data: { ownerInstanceId: 'A' } })
    await expect(markPromptDispatched(ownedBy(w.store, 'B'), queued.id)).rejects.toBeInstanceOf(OwnershipLostError)
    expect(await markPromptDispatched(ownedBy(w.store, 'A'), queued.id)).toMatchObject({ id: queued.id, queuedAt: null, promptDispatchAttempted: true })
    expect(await markPromptDispatched(ownedBy(w.store, 'A'), queued.id)).toBeNull()
    expect(await queuedPrompts(w.store, s.sessionId)).toEqual([])
    expect((await w.summary(s.taskId)).payload.queuedPromptCount).toBe(0)
  })
})
