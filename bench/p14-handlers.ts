// Requests P14 makes of the bench server (bench/server-process.ts runs them in its process): the
// fixture (a workspace and a task without repositories, so no Git observation runs), the open
// permission request's pendingId (as the SDK reads it from the transcript, outside any measured
// window), and the SQL statements the server sent between two calls.
import { writeFileSync } from 'node:fs'
import type { RunningServer } from '../src/app/start-server.ts'
import { createTask } from '../src/store/tasks.ts'
import type { Handlers } from './server-process.ts'
import { adminWorkspace } from './seed.ts'
import { startCpuProfile, stopCpuProfile, summarizeProfile } from './cpu-profile.ts'

export interface SummaryFixture {
  workspaceId: string
  taskId: string
}

/** Statements sent since `record` was last called (only with the start option countStatements, which turns Prisma's query events on). */
let recorded: string[] = []
let listening = false

export const handlers = {
  seed: async (server: RunningServer): Promise<SummaryFixture> => {
    const workspace = await adminWorkspace(server.store, 'p14')
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'summary change' })
    await server.projector.idle()
    return { workspaceId: workspace.id, taskId: task.id }
  },
  /** Starts recording statements afresh (a second listener beside the built-in counter's). */
  record: (server: RunningServer): null => {
    if (!listening) {
      const db = server.store.db as unknown as { $on(event: 'query', listener: (e: { query: string }) => void): void }
      db.$on('query', (e) => recorded.push(e.query))
      listening = true
    }
    recorded = []
    return null
  },
  /** The statements sent since `record`. */
  recorded: (): string[] => recorded,
  /** The session's open permission request, as the SDK finds it in the transcript (PERMISSION_REQUEST, PENDING). */
  pendingId: async (server: RunningServer, args: { sessionId: string }): Promise<string | null> => {
    const row = await server.store.db.message.findFirst({
      where: { sessionId: args.sessionId, kind: 'PERMISSION_REQUEST', status: 'PENDING', pendingId: { not: null } },
      select: { pendingId: true },
    })
    return row?.pendingId ?? null
  },
  /**
   * The projection alone, per summary change: a source written around the store (the task's
   * lastActivityAt moved, which the summary carries; no source event), then projector.project
   * timed (derive, compare-and-update, publish) with one turn of the loop for the delivery. The
   * rest of a change's CPU is its trigger's own (the agent's message or the mutation, its writes).
   */
  projectionCpu: async (server: RunningServer, args: { taskId: string; count: number }): Promise<number> => {
    let us = 0
    for (let i = 0; i < args.count; i++) {
      await server.projector.idle()
      await server.store.db.task.update({ where: { id: args.taskId }, data: { lastActivityAt: new Date(Date.now() + 1000 * (i + 1)) } })
      const before = process.cpuUsage()
      await server.projector.project(args.taskId)
      await new Promise((resolve) => setImmediate(resolve))
      const { user, system } = process.cpuUsage(before)
      us += user + system
    }
    return us / args.count / 1000
  },
  profileStart: () => startCpuProfile(),
  /** Stops it: its top self time and buckets; the whole profile too where BENCH_P14_PROFILE_FILE says (Chrome DevTools or speedscope open it). */
  profileStop: async () => {
    const profile = await stopCpuProfile()
    if (process.env.BENCH_P14_PROFILE_FILE) writeFileSync(process.env.BENCH_P14_PROFILE_FILE, JSON.stringify(profile))
    return summarizeProfile(profile, 25)
  },
} satisfies Handlers
