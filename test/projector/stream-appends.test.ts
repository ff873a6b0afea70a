// A streamed message's appends (one per coalescer window) are content only: no summary input
// changes, so they start no projection. A dozen statements of re-derivation per window of every
// streaming session was what held the embedded (SQLite) server's main thread (bench P10).
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { convergedSummaryRow, projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { PROVIDERS } from '../support/databases.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { appendMessageContent } from '../../src/store/message-content.ts'
import { closeTurn, startTurn } from '../../src/store/turns.ts'

describe.each(PROVIDERS)('streamed appends and the projector (%s)', (provider) => {
  let w: ProjectorWorld
  beforeAll(async () => (w = await projectorWorld(provider)))
  afterAll(() => w?.close())

  const expectConverged = (taskId: string) => convergedSummaryRow(w, taskId)


  it('an append costs its own write (one statement on PostgreSQL, two in one transaction on SQLite) and no projection; the summary stays exact and moves at the turn’s end', async () => {
    const task = await w.newTask('stream')
    const sessionId = await w.newSession(task.id, { state: 'RUNNING' })
    const turn = await startTurn(w.store, { sessionId })
    w.clock.advance(1_000)
    const message = await insertMessage(w.store, { id: randomUUID(), sessionId, turnId: turn.id, author: 'AGENT', kind: 'MESSAGE', content: '0;', status: 'IN_PROGRESS' })
    const before = await expectConverged(task.id)

    w.statements.length = 0
    for (let i = 1; i <= 20; i++) {
      w.clock.advance(100)
      expect(await appendMessageContent(w.store, message.id, `${i};`)).toMatchObject({ version: i + 1 })
    }
    await w.projector.idle()
    // Without the change each append also read the task's workspace and re-derived the summary (a
    // dozen more). SQLite has no data-modifying CTE: the chunk's INSERT and the row's UPDATE.
    expect(w.statements.filter((s) => !/^(BEGIN|COMMIT)/i.test(s.trim()))).toHaveLength(provider === 'postgres' ? 20 : 40)
    const after = await expectConverged(task.id)
    expect(after.revision).toBe(before.revision)
    expect(after.payload).toBe(before.payload)

    // Ending the turn (message.updated for its stream, turn.completed) still reaches the projector.
    w.clock.advance(1_000)
    await closeTurn(w.store, turn.id, { stopReason: 'end_turn', interrupted: false })
    const ended = await expectConverged(task.id)
    expect(ended.revision).toBeGreaterThan(before.revision)
  })
})
