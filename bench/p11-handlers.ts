// P11's seeding, run inside the server process: 10,000 tasks with a session each, their
// attention spread the way a busy workspace has it: every tenth waits on a permission (its own
// waitingSince), every seventh failed with an error, the rest idle, each task its own activity
// time. Rows go straight into the tables, then every summary is derived once (as startup
// reconciliation does), so the lists read stored summaries only. On PostgreSQL the tables are
// then analyzed, as autovacuum would.
import { randomUUID } from 'node:crypto'
import type { RunningServer } from '../src/app/start-server.ts'
import { scaled } from './scenario.ts'
import { adminWorkspace } from './seed.ts'

export const TASKS = scaled(10_000, 1_000)
export const PENDING_EVERY = 10
export const FAILED_EVERY = 7
const CHUNK = 1000

export const handlers = {
  async seed(server: RunningServer, args: { analyze: boolean }) {
    const { db } = server.store
    const workspace = await adminWorkspace(server.store, 'bench')
    const step = await db.workflowStep.findFirstOrThrow({ where: { workspaceId: workspace.id }, orderBy: { position: 'asc' } })
    const now = Date.now()
    for (let from = 0; from < TASKS; from += CHUNK) {
      const indexes = Array.from({ length: Math.min(CHUNK, TASKS - from) }, (_, k) => from + k)
      // Activity times are shuffled against creation order (a prime stride), so no order is the other.
      const tasks = indexes.map((i) => {
        const createdAt = new Date(now - 86_400_000 + i * 1000)
        const lastActivityAt = new Date(now - 3_600_000 + ((i * 7919) % TASKS) * 100)
        return { id: randomUUID(), workspaceId: workspace.id, workflowStepId: step.id, title: `task ${i}`, createdAt, updatedAt: createdAt, lastActivityAt, feedSequence: i + 1 }
      })
      await db.task.createMany({ data: tasks })
      const sessions = tasks.map((t, k) => {
        const i = indexes[k]!
        const failed = i % FAILED_EVERY === 0 && i % PENDING_EVERY !== 0
        return {
          id: randomUUID(),
          taskId: t.id,
          agentProfile: 'mock',
          state: i % PENDING_EVERY === 0 ? 'RUNNING' : failed ? 'FAILED' : 'IDLE',
          isPrimary: true,
          createdAt: t.createdAt,
          updatedAt: t.createdAt,
          ...(failed && { errorCode: 'AGENT_CRASHED', errorMessage: 'the agent exited', errorStamp: `e-${i}`, errorOccurredAt: t.lastActivityAt }),
        }
      })
      await db.session.createMany({ data: sessions })
      const waiting = sessions.filter((s) => s.state === 'RUNNING')
      const turns = waiting.map((s, k) => ({ id: randomUUID(), sessionId: s.id, taskId: s.taskId, startedAt: new Date(now - 600_000 + k * 997) }))
      await db.turn.createMany({ data: turns })
      await db.message.createMany({
        data: turns.map((t) => ({
          id: randomUUID(),
          sessionId: t.sessionId,
          taskId: t.taskId,
          turnId: t.id,
          author: 'AGENT',
          kind: 'PERMISSION_REQUEST',
          status: 'PENDING',
          pendingId: randomUUID(),
          content: 'May I run the tests?',
          createdAt: t.startedAt,
          updatedAt: t.startedAt,
        })),
      })
    }
    await db.workspace.update({ where: { id: workspace.id }, data: { feedSequence: TASKS } })
    await server.projector.reconcileAll()
    await server.projector.idle()
    // PostgreSQL's autovacuum analyzes a table this changed within a minute; without statistics the
    // planner takes 10,000 rows for 160 and reads every row of either order. SQLite keeps none unless asked.
    if (args.analyze) await db.$executeRawUnsafe('ANALYZE')
    return workspace.id
  },
  summaryRanks: async (server: RunningServer, args: { workspaceId: string }) => {
    const ranks = await server.store.db.taskStatusSummary.groupBy({ by: ['attentionRank'], where: { workspaceId: args.workspaceId }, _count: true })
    return Object.fromEntries(ranks.map((r) => [r.attentionRank, r._count]))
  },
}
