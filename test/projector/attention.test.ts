// The attention fields through the projector and the store, on both databases: stored order
// columns written with their payload, a revision only when a field changes, repair and rebuild
// agree, and a takeover of a lost owner's session leaves OWNER_LOST (at the takeover function).
import { randomUUID } from 'node:crypto'
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { takeOverExpired } from '../../src/instances/takeover.ts'
import { insertPrompt } from '../../src/store/prompts.ts'
import { insertMessage, updateMessage } from '../../src/store/messages.ts'
import { registerInstance } from '../../src/store/instances.ts'
import { closeTurn, markPromptDispatched, startTurn } from '../../src/store/turns.ts'
import { loadPendingInputs } from '../../src/store/summary-sources.ts'
import { taskPendingAction } from '../../src/summary/pending.ts'
import { PROVIDERS } from '../support/databases.ts'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { summaryDrift } from '../support/summary-rebuild.ts'

const LEASE = 10_000
const logger = pino({ level: 'silent' })

describe.each(PROVIDERS)('attention fields in the projector (%s)', (provider) => {
  let w: ProjectorWorld
  beforeEach(async () => {
    w = await projectorWorld(provider)
  })
  afterEach(() => w?.close())

  const row = (taskId: string) => w.store.db.taskStatusSummary.findUniqueOrThrow({ where: { taskId } })

  /** A RUNNING primary session with its first prompt dispatched (a turn in flight). */
  async function inFlight() {
    const task = await w.newTask()
    const sessionId = await w.newSession(task.id, { state: 'RUNNING', isPrimary: true })
    const first = await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId, content: 'go' })
    await markPromptDispatched(w.store, first!.turn.id)
    return { taskId: task.id, sessionId, turnId: first!.turn.id }
  }

  it('a prompt accepted behind a turn in flight is stored queued and counted; its dispatch ends the wait', async () => {
    const { taskId, sessionId, turnId } = await inFlight()
    const idle = await w.summary(taskId)
    expect(idle.payload.queuedPromptCount).toBe(0)
    w.clock.advance(1000)
    const second = await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId, content: 'next' })
    expect(second!.turn.queuedAt).toEqual(w.clock.now())
    const queued = await w.summary(taskId)
    expect(queued.payload.queuedPromptCount).toBe(1)
    expect(queued.revision).toBeGreaterThan(idle.revision)
    await closeTurn(w.store, turnId, { stopReason: 'end_turn', interrupted: false })
    await markPromptDispatched(w.store, second!.turn.id)
    expect((await w.store.db.turn.findUniqueOrThrow({ where: { id: second!.turn.id } })).queuedAt).toBeNull()
    expect((await w.summary(taskId)).payload.queuedPromptCount).toBe(0)
    expect(await summaryDrift(w.store, [taskId])).toEqual([])
  })

  it('a prompt accepted while nothing is open is never queued', async () => {
    const task = await w.newTask()
    const sessionId = await w.newSession(task.id, { isPrimary: true })
    const accepted = await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId, content: 'go' })
    expect(accepted!.turn.queuedAt).toBeNull()
    expect((await w.summary(task.id)).payload.queuedPromptCount).toBe(0)
  })

  it('waitingSince and the NEEDS_ATTENTION columns are stored with the payload that implies them', async () => {
    const { taskId, sessionId, turnId } = await inFlight()
    const quiet = await row(taskId)
    const lastActivity = (await w.summary(taskId)).payload.lastActivityAt!
    expect(quiet).toMatchObject({ attentionRank: 2, attentionKey: -Date.parse(lastActivity) })
    w.clock.advance(5000)
    const raisedAt = w.clock.now()
    const request = await insertMessage(w.store, { id: randomUUID(), sessionId, turnId, author: 'AGENT', kind: 'PERMISSION_REQUEST', content: 'Run?', status: 'PENDING', pendingId: 'p1' })
    const waiting = await w.summary(taskId)
    expect(waiting.payload).toMatchObject({ pendingAction: 'PERMISSION', waitingSince: raisedAt.toISOString() })
    expect(await row(taskId)).toMatchObject({ revision: waiting.revision, attentionRank: 0, attentionKey: raisedAt.getTime() })
    // Answered: the wait ends, the task goes back among the rest, in the same revision.
    w.clock.advance(5000)
    await updateMessage(w.store, request.id, { status: 'APPROVED' })
    const answered = await w.summary(taskId)
    expect(answered.payload).toMatchObject({ pendingAction: null, waitingSince: null })
    expect(await row(taskId)).toMatchObject({ revision: answered.revision, attentionRank: 2 })
  })

  it('a message sent while a clarification waits supersedes it (spec: a message-backed reservation is authoritative), projected and hydrated alike; one sent while a permission waits does not', async () => {
    const asked = await inFlight()
    await insertMessage(w.store, { id: randomUUID(), sessionId: asked.sessionId, turnId: asked.turnId, author: 'AGENT', kind: 'CLARIFICATION', content: '?', status: 'PENDING', pendingId: 'c1' })
    expect((await w.summary(asked.taskId)).payload.pendingAction).toBe('CLARIFICATION')
    w.clock.advance(1000)
    await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId: asked.sessionId, content: 'use the staging database' })
    expect((await w.summary(asked.taskId)).payload).toMatchObject({ pendingAction: null, waitingSince: null, queuedPromptCount: 1 })
    // The bounded read boot and task lists hydrate pendingAction from says the same.
    expect(taskPendingAction((await loadPendingInputs(w.store, [asked.taskId])).get(asked.taskId) ?? [])).toBeNull()

    const blocked = await inFlight()
    await insertMessage(w.store, { id: randomUUID(), sessionId: blocked.sessionId, turnId: blocked.turnId, author: 'AGENT', kind: 'PERMISSION_REQUEST', content: 'Run?', status: 'PENDING', pendingId: 'p1' })
    w.clock.advance(1000)
    await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId: blocked.sessionId, content: 'also this' })
    expect((await w.summary(blocked.taskId)).payload).toMatchObject({ pendingAction: 'PERMISSION', queuedPromptCount: 1 })
    expect(taskPendingAction((await loadPendingInputs(w.store, [blocked.taskId])).get(blocked.taskId) ?? [])).toBe('PERMISSION')
    expect(await summaryDrift(w.store, [asked.taskId, blocked.taskId])).toEqual([])
  })

  it('a new revision only when an attention field changes: re-projecting, and rebuilding, change nothing', async () => {
    const { taskId, sessionId, turnId } = await inFlight()
    await insertMessage(w.store, { id: randomUUID(), sessionId, turnId, author: 'AGENT', kind: 'CLARIFICATION', content: '?', status: 'PENDING', pendingId: 'c1' })
    await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId, content: 'queued' })
    const before = await w.summary(taskId)
    const published = w.published.length
    await w.projector.project(taskId)
    await w.restartedProjector().reconcileAll()
    await w.projector.ensure([taskId])
    const after = await w.summary(taskId)
    expect(after.revision).toBe(before.revision)
    expect(w.published.length).toBe(published)
    expect(await summaryDrift(w.store, [taskId])).toEqual([])
  })

  it('a missing or older-rules row is rebuilt with the attention fields and its order columns', async () => {
    const { taskId, sessionId, turnId } = await inFlight()
    await insertMessage(w.store, { id: randomUUID(), sessionId, turnId, author: 'AGENT', kind: 'PERMISSION_REQUEST', content: 'Run?', status: 'PENDING', pendingId: 'p1' })
    await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId, content: 'queued' })
    const live = await w.summary(taskId)
    const liveRow = await row(taskId)
    // A row of the previous derivation: no attention fields in its payload, default order columns.
    const { waitingSince: _w, queuedPromptCount: _q, interruption: _i, ...older } = live.payload
    await w.store.db.taskStatusSummary.update({
      where: { taskId },
      data: { payload: JSON.stringify(older), derivationVersion: 1, attentionRank: 2, attentionKey: 0 },
    })
    const repaired = (await w.projector.ensure([taskId])).get(taskId)!
    expect(repaired.payload).toEqual(live.payload)
    expect(repaired.revision).toBeGreaterThan(live.revision)
    expect(await row(taskId)).toMatchObject({ attentionRank: liveRow.attentionRank, attentionKey: liveRow.attentionKey })
    // A missing row: created from every source, the same payload and columns.
    await w.store.db.taskStatusSummary.delete({ where: { taskId } })
    const rebuilt = (await w.projector.ensure([taskId])).get(taskId)!
    expect(rebuilt.payload).toEqual(live.payload)
    expect(await row(taskId)).toMatchObject({ revision: 1, attentionRank: liveRow.attentionRank, attentionKey: liveRow.attentionKey })
    expect(await summaryDrift(w.store, [taskId])).toEqual([])
  })

  // Prompts queued behind the turn stay queued for the new owner: test/recovery/queued-prompts.test.ts.
  it('takeover of a lost owner’s session: its turn in flight closes OWNER_LOST, and the summary says so', async () => {
    await registerInstance(w.store, 'A', LEASE)
    const { taskId, sessionId } = await inFlight()
    await w.store.db.session.update({ where: { id: sessionId }, data: { ownerInstanceId: 'A' } })
    const before = await w.summary(taskId)
    expect(before.payload).toMatchObject({ queuedPromptCount: 0, interruption: null })

    w.clock.advance(LEASE + 1)
    const takenAt = w.clock.now()
    await registerInstance(w.store, 'B', LEASE)
    const { claimed } = await takeOverExpired({ store: w.store, logger, resumableProfiles: new Set(['mock']), instanceId: 'B', reason: 'lease' })
    expect(claimed.map((s) => s.id)).toEqual([sessionId])
    const turns = await w.store.db.turn.findMany({ where: { sessionId }, orderBy: { startedAt: 'asc' } })
    expect(turns.map((t) => [t.stopReason, t.interrupted, t.interruption])).toEqual([['interrupted', true, 'OWNER_LOST']])
    const after = await w.summary(taskId)
    expect(after.payload).toMatchObject({
      queuedPromptCount: 0,
      interruption: { sessionId, reason: 'OWNER_LOST', at: takenAt.toISOString() },
      primarySession: { id: sessionId, state: 'WAITING_FOR_INPUT' },
    })
    expect(await summaryDrift(w.store, [taskId])).toEqual([])

    // The next prompt (on the new owner) is a newer turn: the interruption clears.
    w.clock.advance(1000)
    await insertPrompt(w.store, { clientMessageId: randomUUID(), sessionId, content: 'again' })
    expect((await w.summary(taskId)).payload.interruption).toBeNull()
  })

  it('a turn the user stopped or the agent crashed out of is no interruption', async () => {
    const { taskId, turnId } = await inFlight()
    await closeTurn(w.store, turnId, { stopReason: 'crashed', interrupted: true })
    expect((await w.summary(taskId)).payload.interruption).toBeNull()
    const other = await inFlight()
    const lifecycle = await startTurn(w.store, { sessionId: other.sessionId, lifecycleOnly: true })
    await closeTurn(w.store, lifecycle.id, { stopReason: 'cancelled', interrupted: true })
    expect((await w.summary(other.taskId)).payload.interruption).toBeNull()
  })
})
