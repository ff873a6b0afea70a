// Requests P5 and P6 make of the bench server (bench/server-process.ts runs them in its process):
// one workspace with one task whose agent session is live, and real summary revisions of it.
import { writeFileSync } from 'node:fs'
import type { RunningServer } from '../src/app/start-server.ts'
import { createTask } from '../src/store/tasks.ts'
import { createSession, updateSession } from '../src/store/sessions.ts'
import type { Handlers } from './server-process.ts'
import { wallClock } from './clock.ts'
import { adminWorkspace } from './seed.ts'
import { startCpuProfile, stopCpuProfile, topSelfTime } from './cpu-profile.ts'

export interface FeedFixture {
  workspaceId: string
  taskId: string
  sessionId: string
}

export const handlers = {
  seed: async (server: RunningServer): Promise<FeedFixture> => {
    const workspace = await adminWorkspace(server.store, 'bench')
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'fan-out' })
    const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
    await server.projector.idle()
    return { workspaceId: workspace.id, taskId: task.id, sessionId: session.id }
  },
  /**
   * One summary revision through the real path (store write → source event → projector → feed):
   * the agent reports another subagent count. Returns the wall clock taken just before the write.
   */
  revise: async (server: RunningServer, args: { sessionId: string; subagents: number }): Promise<number> => {
    const started = wallClock()
    await updateSession(server.store, args.sessionId, { activeSubagentCount: args.subagents })
    return started
  },
  /** Starts a V8 CPU profile of the server process (only the rounds that ask for it). */
  profileStart: () => startCpuProfile(),
  /** Stops it: its top self-time functions. */
  profileStop: async (_server: RunningServer, args?: { file?: string }) => {
    const profile = await stopCpuProfile()
    // The whole profile too, when asked (open it in Chrome DevTools or speedscope).
    if (args?.file) writeFileSync(args.file, JSON.stringify(profile))
    return topSelfTime(profile, 12)
  },
} satisfies Handlers
