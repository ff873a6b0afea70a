// P3's requests of the server process (bench/server-process.ts runs them there): seed a task with a
// mock-agent session, wait for a turn to end, and read back what the store kept of it.
import type { RunningServer } from '../src/app/start-server.ts'
import { messageContent } from '../src/store/messages.ts'
import { createTask } from '../src/store/tasks.ts'
import { adminWorkspace } from './seed.ts'

/** Turn ends awaited by session, armed before the prompt is sent so none is missed. */
const turnEnds = new Map<string, Promise<string>>()

export const handlers = {
  async seed(server: RunningServer) {
    const workspace = await adminWorkspace(server.store, 'p3')
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'ingest' })
    const session = await server.sessions.startSession({ taskId: task.id, agentProfile: 'mock' })
    return { taskId: task.id, sessionId: session.id }
  },

  /** Subscribes (synchronously) to the session's events; `turnEnded` then resolves at its next TurnCompleted. */
  arm(server: RunningServer, { sessionId }: { sessionId: string }) {
    const events = server.pubsub.subscribe('session', sessionId, { bufferLimit: 1_000_000 })
    turnEnds.set(
      sessionId,
      (async () => {
        try {
          for await (const event of events) if (event.type === 'TurnCompleted') return event.turnId
          throw new Error('session events ended before the turn did')
        } finally {
          await events.return?.()
        }
      })(),
    )
    // The waiter is awaited by `turnEnded`; this keeps an early failure from going unhandled.
    turnEnds.get(sessionId)!.catch(() => undefined)
    return true
  },

  turnEnded(_server: RunningServer, { sessionId }: { sessionId: string }) {
    const ended = turnEnds.get(sessionId)
    if (!ended) throw new Error(`arm ${sessionId} first`)
    turnEnds.delete(sessionId)
    return ended
  },

  /**
   * The agent's messages of a turn as stored: the transcript the bench checks character for
   * character. The content comes through the store's own reader (messageContent), not the row's
   * column, which holds only part of a streamed message once its appends are stored apart.
   */
  async stored(server: RunningServer, { turnId }: { turnId: string }) {
    const messages = await server.store.db.message.findMany({
      where: { turnId, author: 'AGENT' },
      orderBy: { createdAt: 'asc' },
      select: { id: true, kind: true, status: true, version: true },
    })
    return Promise.all(messages.map(async ({ id, ...m }) => ({ ...m, content: (await messageContent(server.store, id)) ?? '' })))
  },

  /** What the session's coalescer did: chunks received, merged, and writes published. */
  coalescer(server: RunningServer, { sessionId }: { sessionId: string }) {
    return server.sessions.runtime(sessionId)?.coalescer.stats
  },
}
