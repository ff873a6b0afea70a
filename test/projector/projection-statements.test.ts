// What one projection sends: every summary change pays for it (bench P14), so its statements are
// counted here. A task's launch errors, pull requests and Git observations are read only when the
// task row says it has some; the rest is a fixed set of raw reads and the compare-and-update.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { convergedSummaryRow, projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { PROVIDERS } from '../support/databases.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { startTurn } from '../../src/store/turns.ts'

/** Statements but the transaction's own (BEGIN, COMMIT), which not every provider logs. */
const counted = (statements: string[]) => statements.filter((s) => !/^(BEGIN|COMMIT|ROLLBACK)/i.test(s.trim()))

describe.each(PROVIDERS)('the statements of one projection (%s)', (provider) => {
  let w: ProjectorWorld
  beforeAll(async () => (w = await projectorWorld(provider)))
  afterAll(() => w?.close())

  /** The stored summary, once it equals one derived afresh from every source. */
  const expectConverged = async (taskId: string) =>
    JSON.parse((await convergedSummaryRow(w, taskId)).payload) as { pendingAction: string | null; git: { additions: number } | null }


  /** A source written around the store (no source event), then one projection of it: its statements. */
  async function projectAfter(taskId: string, write: () => Promise<unknown>) {
    await w.projector.idle()
    await write()
    w.statements.length = 0
    await w.projector.project(taskId)
    return counted(w.statements)
  }

  it('a task without launch errors, pull requests or Git observations: the stored row, four source reads, the position and the update', async () => {
    const task = await w.newTask('plain')
    const sessionId = await w.newSession(task.id, { state: 'RUNNING' })
    const turn = await startTurn(w.store, { sessionId })
    await insertMessage(w.store, { id: randomUUID(), sessionId, turnId: turn.id, author: 'AGENT', kind: 'PERMISSION_REQUEST', content: 'Run it?', status: 'PENDING', pendingId: randomUUID() })
    expect((await expectConverged(task.id)).pendingAction).toBe('PERMISSION')

    const statements = await projectAfter(task.id, () => w.store.db.session.update({ where: { id: sessionId }, data: { activeSubagentCount: 2 } }))
    expect(statements).toHaveLength(7)
    expect(statements.join('\n')).not.toMatch(/FROM\s+[`"]?(main[`"]?\.)?[`"]?(TaskLaunchError|PullRequestObservation|GitObservation)[`"]?\s+WHERE/)
    await expectConverged(task.id)
  })

  it('a task with a Git observation reads it too, and its summary carries it', async () => {
    const task = await w.newTask('git', [{ name: 'repo' }])
    const sessionId = await w.newSession(task.id, { state: 'RUNNING' })
    await expectConverged(task.id)

    const statements = await projectAfter(task.id, () =>
      w.store.db.gitObservation.create({
        data: { sessionId, taskRepositoryId: task.repositoryIds[0]!, taskId: task.id, additions: 3, deletions: 1, changedFiles: 1, observedAt: w.clock.now() },
      }),
    )
    expect(statements).toHaveLength(8)
    expect((await expectConverged(task.id)).git).toMatchObject({ additions: 3 })
  })
})
