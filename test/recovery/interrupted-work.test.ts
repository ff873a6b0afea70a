// Ending turns on each provider: what a turn's end does to the messages it left open, what
// recovery does to the work a dead process left open, and that recovery stays a fixed number of
// statements however much was left open.
import { randomUUID } from 'node:crypto'
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { eventually } from '../support/wait.ts'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { insertMessage, type NewMessage } from '../../src/store/messages.ts'
import { closeInterruptedWork, closeTurn, startTurn } from '../../src/store/turns.ts'
import { recoverSessions } from '../../src/recovery/startup-recovery.ts'
import type { SessionEventPayload } from '../../src/pubsub/pubsub.ts'

const logger = pino({ level: 'silent' })

/** Every kind of row a turn can hold, with the status each ends with when the turn is cut off. */
const ROWS: { name: string; kind: NewMessage['kind']; author?: NewMessage['author']; status: string | null; interrupted: string | null; completed: string | null }[] = [
  { name: 'user prompt', kind: 'MESSAGE', author: 'USER', status: null, interrupted: null, completed: null },
  { name: 'streamed message', kind: 'MESSAGE', status: 'IN_PROGRESS', interrupted: 'INTERRUPTED', completed: 'COMPLETED' },
  { name: 'streamed reasoning', kind: 'REASONING', status: 'IN_PROGRESS', interrupted: 'INTERRUPTED', completed: 'COMPLETED' },
  { name: 'tool call pending', kind: 'TOOL_CALL', status: 'PENDING', interrupted: 'INTERRUPTED', completed: 'COMPLETED' },
  { name: 'tool call in progress', kind: 'TOOL_CALL', status: 'IN_PROGRESS', interrupted: 'INTERRUPTED', completed: 'COMPLETED' },
  { name: 'tool call completed', kind: 'TOOL_CALL', status: 'COMPLETED', interrupted: 'COMPLETED', completed: 'COMPLETED' },
  { name: 'tool call failed', kind: 'TOOL_CALL', status: 'FAILED', interrupted: 'FAILED', completed: 'FAILED' },
  // Only recovery cancels requests: a live turn's end leaves them to the runtime, which knows whether the agent still waits.
  { name: 'permission pending', kind: 'PERMISSION_REQUEST', status: 'PENDING', interrupted: 'CANCELLED', completed: 'PENDING' },
  { name: 'permission approved', kind: 'PERMISSION_REQUEST', status: 'APPROVED', interrupted: 'APPROVED', completed: 'APPROVED' },
  { name: 'clarification pending', kind: 'CLARIFICATION', status: 'PENDING', interrupted: 'CANCELLED', completed: 'PENDING' },
]

describe.each(PROVIDERS)('ending turns (%s)', (provider) => {
  let w: ProjectorWorld
  beforeEach(async () => (w = await projectorWorld(provider)))
  afterEach(() => w?.close())

  /** A session mid-turn: an earlier finished turn, an open lifecycle turn, an open user turn holding every kind of row. */
  async function sessionMidTurn(taskId: string, state: 'RUNNING' | 'WAITING_FOR_INPUT' | 'CANCELLED' = 'RUNNING') {
    const sessionId = await w.newSession(taskId, { state })
    const earlier = await startTurn(w.store, { sessionId })
    const done = await insertMessage(w.store, { id: randomUUID(), sessionId, turnId: earlier.id, author: 'AGENT', kind: 'MESSAGE', content: 'old', status: 'COMPLETED' })
    // An older server ended this turn but never finalized its reply.
    const stale = await insertMessage(w.store, { id: randomUUID(), sessionId, turnId: earlier.id, author: 'AGENT', kind: 'MESSAGE', content: 'old reply', status: 'IN_PROGRESS' })
    await w.store.db.turn.update({ where: { id: earlier.id }, data: { completedAt: w.clock.advance(10), stopReason: 'end_turn' } })
    w.clock.advance(10)
    const lifecycle = await startTurn(w.store, { sessionId, lifecycleOnly: true })
    const turn = await startTurn(w.store, { sessionId })
    const rows = new Map(ROWS.map((row) => [row.name, randomUUID()]))
    // One statement for the table (the loose message below announces them to the projector).
    await w.store.db.message.createMany({
      data: ROWS.map((row) => ({
        id: rows.get(row.name)!,
        sessionId,
        taskId,
        turnId: turn.id,
        author: row.author ?? 'AGENT',
        kind: row.kind,
        content: row.name,
        status: row.status,
        pendingId: row.kind === 'PERMISSION_REQUEST' || row.kind === 'CLARIFICATION' ? randomUUID() : null,
        createdAt: w.clock.now(),
        updatedAt: w.clock.now(),
      })),
    })
    // A chunk the agent streamed between turns belongs to no turn, and nobody else will end it either.
    const loose = await insertMessage(w.store, { id: randomUUID(), sessionId, author: 'AGENT', kind: 'MESSAGE', content: 'loose', status: 'IN_PROGRESS' })
    return { sessionId, earlier, done, stale, lifecycle, turn, rows, loose }
  }

  const statusOf = async (id: string) => (await w.store.db.message.findUniqueOrThrow({ where: { id } })).status

  /** name → [status, version] of every row of the table, for one diff of the whole table. */
  async function table(rows: Map<string, string>) {
    const stored = await w.store.db.message.findMany({ where: { id: { in: [...rows.values()] } } })
    const byId = new Map(stored.map((m) => [m.id, m]))
    return Object.fromEntries([...rows].map(([name, id]) => [name, [byId.get(id)!.status, byId.get(id)!.version]]))
  }
  const expected = (end: 'interrupted' | 'completed') =>
    Object.fromEntries(ROWS.map((r) => [r.name, [r[end], r[end] === r.status ? 1 : 2]]))

  it('recovery gives every unfinished row of the table its final status, once (version +1), and reports exactly those', async () => {
    const task = await w.newTask()
    const s = await sessionMidTurn(task.id)
    const closed = await closeInterruptedWork(w.store, [s.sessionId], 'SERVER_RESTART')
    expect(await table(s.rows)).toEqual(expected('interrupted'))
    const changed = ROWS.filter((r) => r.interrupted !== r.status).map((r) => s.rows.get(r.name)!)
    expect(closed.messages.map((m) => m.id).sort()).toEqual([...changed, s.loose.id, s.stale.id].sort())
    expect(closed.messages.every((m) => m.version === 2 && m.sessionId === s.sessionId)).toBe(true)
    // Run again (a retried recovery): nothing is left to change.
    expect(await closeInterruptedWork(w.store, [s.sessionId], 'SERVER_RESTART')).toEqual({ turns: [], messages: [] })
  })

  it('a live turn the agent ended: every unfinished row of the table ends COMPLETED, requests stay as they are', async () => {
    const task = await w.newTask()
    const s = await sessionMidTurn(task.id)
    const { turn } = await closeTurn(w.store, s.turn.id, { stopReason: 'end_turn', interrupted: false })
    expect(turn).toMatchObject({ stopReason: 'end_turn', interrupted: false, completedAt: w.clock.now() })
    expect(await table(s.rows)).toEqual(expected('completed'))
  })

  it('recovery closes every open turn of the sessions it is given, lifecycle-only ones too, and nothing else', async () => {
    const task = await w.newTask()
    const recovered = await sessionMidTurn(task.id)
    const cancelled = await sessionMidTurn(task.id, 'CANCELLED')
    const untouched = await sessionMidTurn(task.id)
    const at = w.clock.advance(1000)
    const closed = await closeInterruptedWork(w.store, [recovered.sessionId, cancelled.sessionId], 'SERVER_RESTART')

    for (const s of [recovered, cancelled]) {
      for (const id of [s.lifecycle.id, s.turn.id])
        expect(await w.store.db.turn.findUniqueOrThrow({ where: { id } })).toMatchObject({ completedAt: at, stopReason: 'interrupted', interrupted: true })
      expect(await w.store.db.turn.findUniqueOrThrow({ where: { id: s.earlier.id } })).toMatchObject({ stopReason: 'end_turn', interrupted: false })
      expect(await statusOf(s.loose.id)).toBe('INTERRUPTED')
      expect(await w.store.db.message.findUniqueOrThrow({ where: { id: s.done.id } })).toMatchObject({ status: 'COMPLETED', version: 1 })
      // The reply of a turn the agent had ended is complete, not cut off.
      expect(await w.store.db.message.findUniqueOrThrow({ where: { id: s.stale.id } })).toMatchObject({ status: 'COMPLETED', version: 2 })
    }
    expect(closed.turns.map((t) => t.id).sort()).toEqual([recovered.lifecycle.id, recovered.turn.id, cancelled.lifecycle.id, cancelled.turn.id].sort())
    // Another session (a live one elsewhere) keeps its open turn and its streaming message.
    expect(await w.store.db.turn.findUniqueOrThrow({ where: { id: untouched.turn.id } })).toMatchObject({ completedAt: null, interrupted: false })
    expect(await statusOf(untouched.rows.get('streamed message')!)).toBe('IN_PROGRESS')
    expect(await statusOf(untouched.rows.get('permission pending')!)).toBe('PENDING')
    // Nothing is left open in the recovered sessions.
    const ids = [recovered.sessionId, cancelled.sessionId]
    expect(await w.store.db.turn.count({ where: { sessionId: { in: ids }, completedAt: null } })).toBe(0)
    expect(await w.store.db.message.count({ where: { sessionId: { in: ids }, status: { in: ['IN_PROGRESS', 'PENDING'] } } })).toBe(0)
  })

  it('a live turn cut off ends its open messages INTERRUPTED, and only its own turn’s (and the turnless ones)', async () => {
    const task = await w.newTask()
    const s = await sessionMidTurn(task.id)
    const { turn, messages } = await closeTurn(w.store, s.turn.id, { stopReason: 'crashed', interrupted: true })
    expect(turn).toMatchObject({ stopReason: 'crashed', interrupted: true })
    expect(await statusOf(s.rows.get('streamed message')!)).toBe('INTERRUPTED')
    expect(await statusOf(s.rows.get('tool call pending')!)).toBe('INTERRUPTED')
    expect(await statusOf(s.loose.id)).toBe('INTERRUPTED')
    expect(messages).toHaveLength(5)
    // The open lifecycle turn is another turn: closing one turn leaves it alone.
    expect(await w.store.db.turn.findUniqueOrThrow({ where: { id: s.lifecycle.id } })).toMatchObject({ completedAt: null })
  })

  it('recovery costs the same statements for one session as for eight, whatever they left open', async () => {
    // Only recovery's own statements are counted, not the projector's reactions to them.
    w.projector.stop()
    await w.projector.idle()
    const small = await w.newTask()
    const one = await sessionMidTurn(small.id)
    w.statements.length = 0
    await closeInterruptedWork(w.store, [one.sessionId], 'SERVER_RESTART')
    const forOne = w.statements.length

    const big = await w.newTask()
    const many: string[] = []
    for (let i = 0; i < 8; i++) many.push((await sessionMidTurn(big.id)).sessionId)
    w.statements.length = 0
    const closed = await closeInterruptedWork(w.store, many, 'SERVER_RESTART')
    expect(closed.turns).toHaveLength(16)
    expect(closed.messages.length).toBe(8 * 8)
    expect(w.statements.length).toBe(forOne)
  })

  it('recoverSessions: sessions left RUNNING wait for input, a gone profile fails, a stopped session keeps its state; the summary loses the unanswerable request, keeps its activity time, and events go out replaceable first', async () => {
    const task = await w.newTask()
    const running = await sessionMidTurn(task.id)
    const stopped = await sessionMidTurn(task.id, 'CANCELLED')
    const orphanTask = await w.newTask()
    const orphan = await sessionMidTurn(orphanTask.id)
    await w.store.db.session.update({ where: { id: orphan.sessionId }, data: { agentProfile: 'gone' } })
    const before = await w.summary(task.id)
    expect(before.payload.pendingAction).toBe('PERMISSION')

    const events: SessionEventPayload[] = []
    const subscriptions = [running, stopped, orphan].map((s) => w.pubsub.subscribe('session', s.sessionId))
    const reading = subscriptions.map(async (events$) => {
      for await (const event of events$) events.push(event)
    })
    w.clock.advance(60_000)
    const result = await recoverSessions({ store: w.store, logger, pubsub: w.pubsub, resumableProfiles: new Set(['mock']) }, [
      { id: running.sessionId, agentProfile: 'mock' },
      { id: stopped.sessionId, agentProfile: 'mock' },
      { id: orphan.sessionId, agentProfile: 'gone' },
    ], 'SERVER_RESTART')
    expect(result).toMatchObject({ resumed: 1, failed: 1, closedTurns: 6 })

    const state = async (id: string) => w.store.db.session.findUniqueOrThrow({ where: { id } })
    expect(await state(running.sessionId)).toMatchObject({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 0 })
    expect(await state(stopped.sessionId)).toMatchObject({ state: 'CANCELLED' })
    expect(await state(orphan.sessionId)).toMatchObject({ state: 'FAILED', errorCode: 'agent_unavailable' })

    const after = await w.summary(task.id)
    expect(after.revision).toBeGreaterThan(before.revision)
    expect(after.payload.pendingAction).toBeNull()
    expect(after.payload.primarySession).toMatchObject({ state: 'WAITING_FOR_INPUT' })
    // Closing by recovery is no conversational milestone: the activity time stays where the dead process left it.
    expect(after.payload.lastActivityAt).toBe(before.payload.lastActivityAt)
    expect((await w.summary(orphanTask.id)).payload.activeError).toMatchObject({ category: 'agent_unavailable', sessionId: orphan.sessionId })

    // Published in one synchronous pass, state changes last: once the last session's arrived, all have.
    await eventually(() => events.some((e) => e.sessionId === orphan.sessionId && e.type === 'SessionStateChanged'))
    await Promise.all(subscriptions.map((s) => s.return?.()))
    await Promise.all(reading)
    const ofRunning = events.filter((e) => e.sessionId === running.sessionId)
    const types = ofRunning.map((e) => e.type)
    expect(types.filter((t) => t === 'MessageUpdated')).toHaveLength(8)
    expect(types.filter((t) => t === 'TurnCompleted')).toHaveLength(2)
    expect(types.at(-1)).toBe('SessionStateChanged')
    expect(types.lastIndexOf('MessageUpdated')).toBeLessThan(types.indexOf('TurnCompleted'))
    expect(events.filter((e) => e.sessionId === stopped.sessionId && e.type === 'SessionStateChanged')).toHaveLength(0)
  })
})
