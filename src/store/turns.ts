// Ending turns, and with them the messages they left open. A message in progress is only ever
// moved on by the agent of its turn: once the turn is over nobody will, so the turn's end gives
// it its final status in the same transaction (a reader never sees a closed turn with a message
// still streaming, nor the reverse).
import type { Prisma } from '../generated/sqlite/client.ts'
import type { Store, SourceEventKind } from './store.ts'
import { fenced } from './runtime.ts'
import type { InterruptionReason } from '../summary/types.ts'

/** Final status of a streamed message or tool call whose turn was cut off before the agent finished it. */
export const INTERRUPTED = 'INTERRUPTED'
/** stopReason of a turn its server process left open (restart, takeover). */
export const INTERRUPTED_STOP_REASON = 'interrupted'

/**
 * Rows still being produced. Permission and clarification requests are not among them: they
 * wait on the user, and only a turn that can no longer be answered cancels them.
 */
const UNFINISHED: Prisma.MessageWhereInput = { OR: [{ status: 'IN_PROGRESS' }, { kind: 'TOOL_CALL', status: 'PENDING' }] }
const PENDING_REQUEST: Prisma.MessageWhereInput = { status: 'PENDING', kind: { in: ['PERMISSION_REQUEST', 'CLARIFICATION'] } }

/** Ids a caller publishes MessageUpdated for (version: the one just written). */
export interface FinalizedMessage {
  id: string
  sessionId: string
  version: number
}

export interface ClosedTurn {
  id: string
  sessionId: string
  taskId: string
}

async function emitFor(store: Store, kind: SourceEventKind, rows: readonly { taskId: string; sessionId: string }[]) {
  const pairs = new Map(rows.map((r) => [`${r.taskId}\u0000${r.sessionId}`, r]))
  if (pairs.size === 0) return
  const taskIds = [...new Set(rows.map((r) => r.taskId))]
  const tasks = await store.db.task.findMany({ where: { id: { in: taskIds } }, select: { id: true, workspaceId: true } })
  const workspaceOf = new Map(tasks.map((t) => [t.id, t.workspaceId]))
  for (const { taskId, sessionId } of pairs.values()) {
    const workspaceId = workspaceOf.get(taskId)
    // A task deleted meanwhile took its sessions with it: there is no summary left to re-derive.
    if (workspaceId) store.events.emit({ kind, taskId, workspaceId, sessionId })
  }
}

/**
 * Ends a turn of a live session. Its open messages (and the session's open messages outside any
 * turn) become COMPLETED when the agent ended the turn, INTERRUPTED when it was cut off. A
 * conversational turn's end is activity (moves the task's activity time), whichever way it ended.
 */
export async function closeTurn(store: Store, turnId: string, end: { stopReason: string; interrupted: boolean }) {
  const at = store.now()
  const { turn, messages } = await fenced(store, `turn ${turnId}`, () => store.db.$transaction(async (tx) => {
    const turn = await tx.turn.update({
      where: { id: turnId, ...(store.owner && { session: { ownerInstanceId: store.owner } }) },
      data: { completedAt: at, stopReason: end.stopReason, interrupted: end.interrupted },
    })
    const messages = await tx.message.updateManyAndReturn({
      where: { AND: [{ sessionId: turn.sessionId, OR: [{ turnId }, { turnId: null }] }, UNFINISHED] },
      data: { status: end.interrupted ? INTERRUPTED : 'COMPLETED', version: { increment: 1 }, updatedAt: at },
      select: { id: true, sessionId: true, taskId: true, version: true },
    })
    if (!turn.lifecycleOnly)
      await tx.task.updateMany({ where: { id: turn.taskId, lastActivityAt: { lt: at } }, data: { lastActivityAt: at } })
    return { turn, messages }
  }))

  await emitFor(store, 'message.updated', messages)
  await emitFor(store, 'turn.completed', [turn])
  return { turn, messages: messages.map(({ id, sessionId, version }): FinalizedMessage => ({ id, sessionId, version })) }
}

/** Ids per statement: well under SQLite's and PostgreSQL's bound-parameter limits. */
const BATCH = 500

/**
 * The work a dead process left open in these sessions (restart, and takeover of another
 * instance's sessions): every open turn, lifecycle-only ones too, closes as interrupted, with
 * `reason` recorded as the way the server cut it off (queued prompts close with it: they are
 * no longer waiting, and the task's queued-prompt count says so); every
 * message still in progress becomes INTERRUPTED (COMPLETED when its turn had ended normally);
 * every pending permission or clarification becomes CANCELLED, since the agent that asked is gone
 * and a relaunched one never receives the answer. A fixed number of statements per 500 sessions, whatever the number of turns or
 * messages. Closing by recovery is not activity: the task's activity time stays where the dead
 * process left it.
 */
export async function closeInterruptedWork(store: Store, sessionIds: readonly string[], reason: InterruptionReason) {
  const turns: ClosedTurn[] = []
  const messages: (FinalizedMessage & { taskId: string })[] = []
  const at = store.now()
  const select = { id: true, sessionId: true, taskId: true, version: true } as const
  for (let i = 0; i < sessionIds.length; i += BATCH) {
    const ids = sessionIds.slice(i, i + BATCH)
    const batch = await store.db.$transaction(async (tx) => {
      // Before the open turns close: a message left in progress in a turn the agent did end (by a
      // server that did not finalize messages) is a complete reply, not a cut-off one.
      const ended = await tx.message.updateManyAndReturn({
        where: { AND: [{ sessionId: { in: ids }, turn: { completedAt: { not: null }, interrupted: false } }, UNFINISHED] },
        data: { status: 'COMPLETED', version: { increment: 1 }, updatedAt: at },
        select,
      })
      const closed = await tx.turn.updateManyAndReturn({
        where: { sessionId: { in: ids }, completedAt: null },
        data: { completedAt: at, stopReason: INTERRUPTED_STOP_REASON, interrupted: true, interruption: reason },
        select: { id: true, sessionId: true, taskId: true },
      })
      const partial = await tx.message.updateManyAndReturn({
        where: { AND: [{ sessionId: { in: ids } }, UNFINISHED] },
        data: { status: INTERRUPTED, version: { increment: 1 }, updatedAt: at },
        select,
      })
      const unanswerable = await tx.message.updateManyAndReturn({
        where: { AND: [{ sessionId: { in: ids } }, PENDING_REQUEST] },
        data: { status: 'CANCELLED', version: { increment: 1 }, updatedAt: at },
        select,
      })
      return { closed, finalized: [...ended, ...partial, ...unanswerable] }
    })
    turns.push(...batch.closed)
    messages.push(...batch.finalized)
  }
  await emitFor(store, 'message.updated', messages)
  await emitFor(store, 'turn.completed', turns)
  return { turns, messages: messages.map(({ id, sessionId, version }): FinalizedMessage => ({ id, sessionId, version })) }
}

/**
 * Sessions with an open turn or a message in progress, whatever their state. Only a server that
 * knows no other process runs agents on this database (SQLite's lock) may treat them all as left
 * open by a dead process.
 */
export function sessionsWithOpenWork({ db }: Store) {
  return db.session.findMany({
    where: { OR: [{ turns: { some: { completedAt: null } } }, { messages: { some: UNFINISHED } }] },
    select: { id: true, agentProfile: true },
  })
}
