// Requests P5 and P6 make of the bench server (bench/server-process.ts runs them in its process):
// one workspace with one task whose agent session is live in a turn, the agent side of a
// permission request (raised, then answered), and how many feed frames a change made.
// The other P5 trigger, a task edit, is the real updateTask mutation the parent sends over HTTP.
import { randomUUID } from 'node:crypto'
import { readdirSync, writeFileSync } from 'node:fs'
import type { RunningServer } from '../src/app/start-server.ts'
import { createTask } from '../src/store/tasks.ts'
import { createSession } from '../src/store/sessions.ts'
import { startTurn } from '../src/store/turns.ts'
import { findPendingRequest, insertMessage, updateMessage } from '../src/store/messages.ts'
import { readSummaryRows } from '../src/store/summaries.ts'
import { feedEventOf } from '../src/feed/task-feed.ts'
import { permissionOptions } from '../src/agents/agent-publications.ts'
import { toolCallDetail } from '../src/agents/tool-call-detail.ts'
import type { Handlers } from './server-process.ts'
import { wallClock } from './clock.ts'
import { adminWorkspace } from './seed.ts'
import { startCpuProfile, stopCpuProfile, summarizeProfile, writeSyscalls } from './cpu-profile.ts'

export interface FeedFixture {
  workspaceId: string
  taskId: string
  sessionId: string
}

/** The fixture's state between requests (this module lives in the server process). */
const state = {
  fixture: undefined as (FeedFixture & { turnId: string }) | undefined,
  /** Feed events (TaskUpserted / TaskDeleted) of the fixture's workspace raised since the change began. */
  feedEvents: 0,
  /** The fixture task's summary revision when the change began. */
  revision: 0,
  /** The open permission request's pendingId, if one is open. */
  pending: undefined as string | undefined,
}

async function summaryRevision(server: RunningServer, taskId: string): Promise<number> {
  const [row] = await readSummaryRows(server.store, [taskId])
  return row?.revision ?? 0
}

/** What an agent asks: the options and tool call a real permission request carries (ACP session/request_permission). */
const PERMISSION_METADATA = JSON.stringify({
  options: permissionOptions([
    { optionId: 'allow_once', name: 'Allow', kind: 'allow_once' },
    { optionId: 'allow_always', name: 'Always allow', kind: 'allow_always' },
    { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
  ]),
  toolCall: toolCallDetail({ kind: 'execute', rawInput: { command: 'npm test' }, locations: [{ path: '/work/repo/package.json', line: null }] }),
})

export const handlers = {
  seed: async (server: RunningServer): Promise<FeedFixture> => {
    const workspace = await adminWorkspace(server.store, 'bench')
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'fan-out' })
    const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
    // The turn in flight: a permission request arms the summary's pendingAction only in the session's current turn.
    const turn = await startTurn(server.store, { sessionId: session.id })
    await server.projector.idle()
    state.fixture = { workspaceId: workspace.id, taskId: task.id, sessionId: session.id, turnId: turn.id }
    // Every write to the Task row is one feed event (the task feed publishes it as it is raised).
    server.store.events.on((event) => {
      if (event.workspaceId === workspace.id && feedEventOf(event)) state.feedEvents++
    })
    return { workspaceId: workspace.id, taskId: task.id, sessionId: session.id }
  },
  /** Before a change: the projector idle, the counts of what the change will publish zeroed. */
  changeBegins: async (server: RunningServer): Promise<null> => {
    await server.projector.idle()
    state.feedEvents = 0
    state.revision = await summaryRevision(server, state.fixture!.taskId)
    return null
  },
  /**
   * After a change: once it is projected, how many frames it published on the workspace feed (its
   * feed events and its summary revisions), which is how many each subscriber gets.
   */
  changeFrames: async (server: RunningServer): Promise<number> => {
    await server.projector.idle()
    return state.feedEvents + (await summaryRevision(server, state.fixture!.taskId)) - state.revision
  },
  /**
   * The agent's permission request, as AcpUpdates.permission records it: a PENDING request message
   * of the turn in flight (the projector derives pendingAction PERMISSION), announced on the
   * session's stream; the next call answers it as SessionService.respond does (the request read,
   * its status written, the update announced), and pendingAction clears. Returns the wall clock
   * taken just before the store is touched.
   */
  permission: async (server: RunningServer): Promise<number> => {
    const { sessionId, turnId } = state.fixture!
    const started = wallClock()
    if (state.pending === undefined) {
      const pendingId = randomUUID()
      const message = await insertMessage(server.store, {
        id: randomUUID(),
        sessionId,
        turnId,
        author: 'AGENT',
        kind: 'PERMISSION_REQUEST',
        content: 'Run npm test',
        status: 'PENDING',
        pendingId,
        metadata: PERMISSION_METADATA,
      })
      state.pending = pendingId
      void server.pubsub.publish('session', sessionId, { type: 'MessageAdded', sessionId, messageId: message.id }).catch(() => undefined)
    } else {
      const request = await findPendingRequest(server.store, sessionId, state.pending)
      const updated = await updateMessage(server.store, request!.id, { status: 'APPROVED' })
      state.pending = undefined
      void server.pubsub.publish('session', sessionId, { type: 'MessageUpdated', sessionId, messageId: updated.id, version: updated.version }).catch(() => undefined)
    }
    return started
  },
  /** Write system calls this process has made (each socket write or writev is one). */
  writes: () => writeSyscalls(),
  /** Files this process holds open (sockets included). */
  openFiles: () => readdirSync('/proc/self/fd').length,
  /** Starts a V8 CPU profile of the server process (only the rounds that ask for it). */
  profileStart: () => startCpuProfile(),
  /** Stops it: its top self-time functions and its self time in buckets. */
  profileStop: async (_server: RunningServer, args?: { file?: string }) => {
    const profile = await stopCpuProfile()
    // The whole profile too, when asked (open it in Chrome DevTools or speedscope).
    if (args?.file) writeFileSync(args.file, JSON.stringify(profile))
    return summarizeProfile(profile, 12)
  },
} satisfies Handlers
