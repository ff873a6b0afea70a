// User prompts: a user message stored under its client-generated id, with the turn it starts.
// A client id is unique in its workspace; the same id in another workspace is another message.
import { randomUUID } from 'node:crypto'
import type { Store } from './store.ts'
import type { SessionRow } from './rows.ts'
import { emit, workspaceOf } from './events.ts'
import { NO_INTERRUPTION } from './sessions.ts'
import { touchActivity } from './tasks.ts'
import { wholeContent } from './message-content.ts'

/** A session as a prompt needs it: with its task's workspace (the scope of client ids). */
export type PromptSession = Pick<SessionRow, 'id' | 'taskId' | 'interruption'> & { workspaceId: string }

/** The session a prompt goes to, with its task's workspace; null when gone. */
export async function promptSession(store: Store, sessionId: string): Promise<(SessionRow & { workspaceId: string }) | null> {
  const session = await store.db.session.findUnique({ where: { id: sessionId } })
  return session && { ...session, workspaceId: await workspaceOf(store, session.taskId) }
}


/**
 * Stores a user prompt under its client-generated id together with the turn it starts, in one
 * transaction. (workspace, clientMessageId) is unique, so of concurrent requests with one id in
 * one workspace (on any instance) exactly one inserts; the others get `undefined` and replay the
 * stored message. The row's own id is the server's. `session`: the row as promptSession read it
 * (its reader spares the lookup); `sessionId`: the session is read here.
 */
export async function insertPrompt(
  store: Store,
  input: { clientMessageId: string; content: string } & ({ session: PromptSession } | { sessionId: string }),
) {
  const session = 'session' in input ? input.session : await promptSession(store, input.sessionId)
  if (!session) throw new Error(`Session ${'sessionId' in input ? input.sessionId : ''} does not exist.`)
  const at = store.now()
  try {
    const { message, turn } = await store.db.$transaction(async (tx) => {
      // Behind a turn still open (in flight, or itself waiting) the prompt waits in the session's
      // queue: stored as queued until its dispatch, so the count survives this process.
      const ahead = await tx.turn.count({ where: { sessionId: session.id, completedAt: null, lifecycleOnly: false } })
      // The user's next prompt after the server cut a turn off answers the summary's interruption.
      if (session.interruption !== null) await tx.session.update({ where: { id: session.id }, data: NO_INTERRUPTION })
      const turn = await tx.turn.create({
        data: { sessionId: session.id, taskId: session.taskId, startedAt: at, queuedAt: ahead > 0 ? at : null },
      })
      const message = await tx.message.create({
        data: {
          id: randomUUID(),
          clientMessageId: input.clientMessageId,
          workspaceId: session.workspaceId,
          sessionId: session.id,
          taskId: session.taskId,
          turnId: turn.id,
          author: 'USER',
          kind: 'MESSAGE',
          content: input.content,
          createdAt: at,
          updatedAt: at,
        },
      })
      return { message, turn }
    })
    await touchActivity(store, session.taskId, at)
    await emit(store, 'message.added', session.taskId, session.id, session.workspaceId)
    await emit(store, 'turn.started', session.taskId, session.id, session.workspaceId)
    return { message, turn }
  } catch (error) {
    if ((error as { code?: string }).code === 'P2002') return undefined
    throw error
  }
}

/** The user message a client id names in a workspace (ids of other workspaces are not visible here). */
export async function findUserMessage(store: Store, taskId: string, clientMessageId: string) {
  const workspaceId = await workspaceOf(store, taskId)
  return wholeContent(store, await store.db.message.findUnique({ where: { workspaceId_clientMessageId: { workspaceId, clientMessageId } } }))
}
