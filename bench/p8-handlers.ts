// P8's requests of the server process: seeding a large workspace and agent activity straight
// through the store (what the bench measures is the resume, not the seeding), and the feed's
// expected state read from the database.
import type { RunningServer } from '../src/app/start-server.ts'
import { createTask } from '../src/store/tasks.ts'
import { insertMessage } from '../src/store/messages.ts'
import { createSession } from '../src/store/sessions.ts'
import { startTurn } from '../src/store/turns.ts'
import { adminWorkspace } from './seed.ts'

export const handlers = {
  async seed(server: RunningServer, args: { tasks: number }) {
    const { store } = server
    const workspace = await adminWorkspace(store, 'bench')
    const taskIds: string[] = []
    for (let i = 0; i < args.tasks; i++) taskIds.push((await createTask(store, { workspaceId: workspace.id, title: `task ${i}` })).id)
    await server.projector.idle()
    return { workspaceId: workspace.id, taskIds }
  },
  /** A user message in a new running turn of each task: its summary gets a new revision, its row does not change. */
  async activity(server: RunningServer, args: { taskIds: string[]; prefix: string }) {
    for (const [i, taskId] of args.taskIds.entries()) {
      const session = await createSession(server.store, { taskId, agentProfile: 'mock', state: 'RUNNING' })
      const turn = await startTurn(server.store, { sessionId: session.id })
      await insertMessage(server.store, { id: `${args.prefix}-${i}`, sessionId: session.id, turnId: turn.id, author: 'USER', kind: 'MESSAGE', content: 'go on' })
    }
    await server.projector.idle()
  },
  /** Every task row and summary positioned after `after`, in its current state. */
  async latestAfter(server: RunningServer, args: { workspaceId: string; after: number }) {
    const range = { workspaceId: args.workspaceId, feedSequence: { gt: args.after } }
    const [tasks, summaries] = await Promise.all([
      server.store.db.task.findMany({ where: range, select: { id: true, title: true } }),
      server.store.db.taskStatusSummary.findMany({ where: range, select: { taskId: true, revision: true } }),
    ])
    return { titles: tasks.map((t) => [t.id, t.title] as const), revisions: summaries.map((s) => [s.taskId, s.revision] as const) }
  },
}
