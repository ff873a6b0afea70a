// P4's seeding, run inside the server process: 500 tasks, each with a session; every tenth
// session running with a PENDING permission request in its newest turn; then `history` messages
// in completed turns older than those, round-robin over the sessions. Everything goes straight
// into the tables (no source events, no summaries): the first read derives every summary, as it
// would after an upgrade, and later reads must be flat whatever lies underneath.
import { randomUUID } from 'node:crypto'
import type { RunningServer } from '../src/app/start-server.ts'
import { adminWorkspace } from './seed.ts'
import { startFloor } from './p4-floor.ts'

export const TASKS = 500
/** Every tenth task has a running session waiting on a permission: pending reconciliation reads them. */
export const PENDING_EVERY = 10
const MESSAGES_PER_TURN = 20
const CHUNK = 1000

export const handlers = {
  /** `tasks`: TASKS unless a short run (BENCH_SHORT) asks for fewer. */
  async seed(server: RunningServer, args: { history: number; tasks?: number }) {
    const count = args.tasks ?? TASKS
    const { db } = server.store
    const workspace = await adminWorkspace(server.store, 'bench')
    const step = await db.workflowStep.findFirstOrThrow({ where: { workspaceId: workspace.id }, orderBy: { position: 'asc' } })
    const now = Date.now()
    const historyStart = now - 30 * 86_400_000
    const tasks = Array.from({ length: count }, (_, i) => {
      const at = new Date(now - 3_600_000 + i * 1000)
      return { id: randomUUID(), workspaceId: workspace.id, workflowStepId: step.id, title: `task ${i}`, createdAt: at, updatedAt: at, lastActivityAt: at, feedSequence: i + 1 }
    })
    await db.task.createMany({ data: tasks })
    await db.workspace.update({ where: { id: workspace.id }, data: { feedSequence: count } })
    const sessions = tasks.map((t, i) => ({
      id: randomUUID(),
      taskId: t.id,
      agentProfile: 'mock',
      state: i % PENDING_EVERY === 0 ? 'RUNNING' : 'IDLE',
      isPrimary: true,
      createdAt: new Date(historyStart - 1000),
      updatedAt: t.createdAt,
    }))
    await db.session.createMany({ data: sessions })
    const pendingTurns = sessions.filter((s) => s.state === 'RUNNING').map((s) => ({ id: randomUUID(), sessionId: s.id, taskId: s.taskId, startedAt: new Date(now - 60_000) }))
    await db.turn.createMany({ data: pendingTurns })
    await db.message.createMany({
      data: pendingTurns.flatMap((t, i) => [
        { id: `p-${i}`, sessionId: t.sessionId, taskId: t.taskId, turnId: t.id, author: 'USER', kind: 'MESSAGE', content: 'go', createdAt: t.startedAt, updatedAt: t.startedAt },
        { id: `perm-${i}`, sessionId: t.sessionId, taskId: t.taskId, turnId: t.id, author: 'AGENT', kind: 'PERMISSION_REQUEST', status: 'PENDING', pendingId: `perm-${i}`, content: 'May I run the tests?', createdAt: t.startedAt, updatedAt: t.startedAt },
      ]),
    })
    for (let done = 0; done < args.history; done += CHUNK) {
      const turns: { id: string; sessionId: string; taskId: string; startedAt: Date; completedAt: Date; stopReason: string }[] = []
      const messages: { id: string; sessionId: string; taskId: string; turnId: string; author: string; kind: string; status: string | null; content: string; createdAt: Date; updatedAt: Date }[] = []
      for (let k = done; k < Math.min(args.history, done + CHUNK); k++) {
        const turnNumber = Math.floor(k / MESSAGES_PER_TURN)
        const session = sessions[turnNumber % sessions.length]!
        const turnId = `ht-${turnNumber}`
        const at = new Date(historyStart + k * 1000)
        const position = k % MESSAGES_PER_TURN
        if (position === 0) turns.push({ id: turnId, sessionId: session.id, taskId: session.taskId, startedAt: at, completedAt: new Date(at.getTime() + MESSAGES_PER_TURN * 1000), stopReason: 'end_turn' })
        const kind = position === 0 ? 'MESSAGE' : ['REASONING', 'TOOL_CALL', 'MESSAGE'][position % 3]!
        messages.push({
          id: `h-${k}`,
          sessionId: session.id,
          taskId: session.taskId,
          turnId,
          author: position === 0 ? 'USER' : 'AGENT',
          kind,
          status: kind === 'TOOL_CALL' ? 'completed' : null,
          content: `history ${k} `.padEnd(300, 'lorem ipsum dolor sit amet '),
          createdAt: at,
          updatedAt: at,
        })
      }
      if (turns.length) await db.turn.createMany({ data: turns })
      await db.message.createMany({ data: messages })
    }
    return workspace.id
  },
  /** The hand-built floor beside the server (bench/p4-floor.ts): its URL. */
  floor: (server: RunningServer) => startFloor(server),
  summaryRows: (server: RunningServer, args: { workspaceId: string }) => server.store.db.taskStatusSummary.count({ where: { workspaceId: args.workspaceId } }),
}
