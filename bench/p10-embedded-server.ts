// P10's requests of the server process (bench/server-process.ts runs them there): seed the tasks
// and sessions, and the server's own event-loop delay (perf_hooks), reset at each read.
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks'
import type { RunningServer } from '../src/app/start-server.ts'
import { createTask } from '../src/store/tasks.ts'
import { adminWorkspace } from './seed.ts'

let loop: ELDHistogram | undefined

export const handlers = {
  /** One task per profile in one workspace, each with a session of that agent profile. */
  async seed(server: RunningServer, { profiles }: { profiles: string[] }) {
    const workspace = await adminWorkspace(server.store, 'p10')
    const sessions: { taskId: string; sessionId: string }[] = []
    for (const [i, agentProfile] of profiles.entries()) {
      const task = await createTask(server.store, { workspaceId: workspace.id, title: `p10 ${i}` })
      const session = await server.sessions.startSession({ taskId: task.id, agentProfile })
      sessions.push({ taskId: task.id, sessionId: session.id })
    }
    return { workspaceId: workspace.id, sessions }
  },

  /** Chunks the sessions' coalescers received so far, and how many sessions this process runs. */
  progress(server: RunningServer, { sessionIds }: { sessionIds: string[] }) {
    const received = sessionIds.reduce((n, id) => n + (server.sessions.runtime(id)?.coalescer.stats.received ?? 0), 0)
    return { received, live: server.sessions.liveSessionIds().length }
  },

  /** The event loop's delay since the last call (10 ms resolution), in ms; the first call starts it. */
  loopDelay() {
    const h = loop
    loop = monitorEventLoopDelay({ resolution: 10 })
    loop.enable()
    if (!h) return null
    h.disable()
    const ms = (ns: number) => ns / 1e6
    return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) }
  },
}
