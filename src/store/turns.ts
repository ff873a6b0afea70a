// Turns: their start, the dispatch of their prompt, their end. Ending turns, and with them the messages they left open. A message in progress is only ever
// moved on by the agent of its turn: once the turn is over nobody will, so the turn's end gives
// it its final status in the same transaction (a reader never sees a closed turn with a message
// still streaming, nor the reverse).
import type { Prisma } from '../generated/sqlite/client.ts'
import { OwnershipLostError, type Store } from './store.ts'
import { emit, emitFor } from './events.ts'
import { fenced, stillOwned } from './fencing.ts'
import { touchActivity } from './tasks.ts'
import { NO_INTERRUPTION } from './sessions.ts'
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
 * A user prompt accepted behind another turn and never handed to an agent: it is stored, so it
 * survives its server process and is dispatched (once) by the session's next owner.
 */
export const QUEUED_PROMPT = { queuedAt: { not: null }, promptDispatchAttempted: false, lifecycleOnly: false, completedAt: null } satisfies Prisma.TurnWhereInput

/**
 * The work a dead process left open in these sessions (restart, and takeover of another
 * instance's sessions): every open turn, lifecycle-only ones too, closes as interrupted, with
 * `reason` recorded as the way the server cut it off, except the queued prompts (never
 * dispatched) of the sessions in `keepQueued`: those stay open and queued for the new owner to
 * dispatch (a turn whose prompt was attempted may have reached the agent, so it is never
 * re-sent: it closes). Queued prompts of other sessions (nobody can run them) close too; every
 * message still in progress becomes INTERRUPTED (COMPLETED when its turn had ended normally);
 * every pending permission or clarification becomes CANCELLED, since the agent that asked is gone
 * and a relaunched one never receives the answer. A fixed number of statements per 500 sessions, whatever the number of turns or
 * messages. Closing by recovery is not activity: the task's activity time stays where the dead
 * process left it.
 */
export async function closeInterruptedWork(store: Store, sessionIds: readonly string[], reason: InterruptionReason, keepQueued: readonly string[] = []) {
  const keep = new Set(keepQueued)
  const turns: ClosedTurn[] = []
  const messages: (FinalizedMessage & { taskId: string })[] = []
  const at = store.now()
  const select = { id: true, sessionId: true, taskId: true, version: true } as const
  for (let i = 0; i < sessionIds.length; i += BATCH) {
    const ids = sessionIds.slice(i, i + BATCH)
    const kept = ids.filter((id) => keep.has(id))
    const batch = await store.db.$transaction(async (tx) => {
      // Before the open turns close: a message left in progress in a turn the agent did end (by a
      // server that did not finalize messages) is a complete reply, not a cut-off one.
      const ended = await tx.message.updateManyAndReturn({
        where: { AND: [{ sessionId: { in: ids }, turn: { completedAt: { not: null }, interrupted: false } }, UNFINISHED] },
        data: { status: 'COMPLETED', version: { increment: 1 }, updatedAt: at },
        select,
      })
      const closed = await tx.turn.updateManyAndReturn({
        where: { sessionId: { in: ids }, completedAt: null, ...(kept.length > 0 && { NOT: { sessionId: { in: kept }, ...QUEUED_PROMPT } }) },
        data: { completedAt: at, stopReason: INTERRUPTED_STOP_REASON, interrupted: true, interruption: reason },
        select: { id: true, sessionId: true, taskId: true },
      })
      // The summary shows the cut on the session until the user acts on it (a queued prompt the
      // new owner dispatches is the server's work, not the user's: it leaves the mark).
      const cut = [...new Set(closed.map((t) => t.sessionId))]
      if (cut.length > 0) await tx.session.updateMany({ where: { id: { in: cut } }, data: { interruption: reason, interruptedAt: at } })
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

/** Of these sessions, those with a stored queued prompt (one statement). */
export async function sessionsWithQueuedPrompts({ db }: Store, sessionIds: readonly string[]): Promise<string[]> {
  if (sessionIds.length === 0) return []
  const rows = await db.turn.findMany({
    where: { sessionId: { in: [...sessionIds] }, ...QUEUED_PROMPT },
    select: { sessionId: true },
    distinct: ['sessionId'],
  })
  return rows.map((r) => r.sessionId)
}

/**
 * A session's stored queued prompts in the order they were accepted, with their text. A user's
 * prompt is stored whole in its row (only an agent's stream appends chunks: message-content.ts).
 */
export async function queuedPrompts({ db }: Store, sessionId: string): Promise<{ turnId: string; text: string }[]> {
  const turns = await db.turn.findMany({
    where: { sessionId, ...QUEUED_PROMPT },
    orderBy: [{ queuedAt: 'asc' }, { startedAt: 'asc' }, { id: 'asc' }],
    select: { id: true, messages: { where: { author: 'USER' }, orderBy: { createdAt: 'asc' }, take: 1, select: { content: true } } },
  })
  return turns.flatMap((t) => (t.messages[0] ? [{ turnId: t.id, text: t.messages[0].content }] : []))
}

/**
 * Closes a session's queued prompts that nobody will run (its agent could not be relaunched):
 * they are no longer waiting, and the task's queued-prompt count says so. Not activity.
 */
export async function closeQueuedPrompts(store: Store, sessionId: string, stopReason: string): Promise<ClosedTurn[]> {
  const turns = await store.db.turn.updateManyAndReturn({
    where: { sessionId, ...QUEUED_PROMPT },
    data: { completedAt: store.now(), stopReason, interrupted: true },
    select: { id: true, sessionId: true, taskId: true },
  })
  await emitFor(store, 'turn.completed', turns)
  return turns
}

export async function startTurn(
  store: Store,
  input: {
    sessionId: string
    lifecycleOnly?: boolean
    promptDispatchPending?: boolean
    promptDispatchAttempted?: boolean
    startedAt?: Date
  },
) {
  const session = await store.db.session.findUniqueOrThrow({ where: { id: input.sessionId } })
  const startedAt = input.startedAt ?? store.now()
  const turn = await store.db.turn.create({
    data: {
      sessionId: session.id,
      taskId: session.taskId,
      startedAt,
      lifecycleOnly: input.lifecycleOnly ?? false,
      promptDispatchPending: input.promptDispatchPending ?? false,
      promptDispatchAttempted: input.promptDispatchAttempted ?? false,
    },
  })
  // Lifecycle-only turns (agent resume) and bare reservations are not conversational milestones.
  if (!turn.lifecycleOnly && !turn.promptDispatchPending) await touchActivity(store, turn.taskId, startedAt)
  await emit(store, 'turn.started', turn.taskId, turn.sessionId)
  return turn
}

/**
 * Marks a turn's prompt as dispatched to the agent: a reservation becomes authoritative and a
 * conversational start, and a queued prompt stops waiting. A compare-and-set, written before the
 * prompt goes out: of every attempt to dispatch one prompt (a runtime refilled from the store,
 * a new owner after a takeover) only the first gets the turn; the others get null and must not
 * send it. A session owned elsewhere (or gone) is refused as for any fenced write.
 */
export async function markPromptDispatched(store: Store, turnId: string) {
  const [turn] = await store.db.turn.updateManyAndReturn({
    where: { id: turnId, promptDispatchAttempted: false, session: stillOwned(store) },
    data: { promptDispatchAttempted: true, queuedAt: null },
  })
  if (!turn) {
    const row = await store.db.turn.findUnique({ where: { id: turnId }, select: { session: { select: { ownerInstanceId: true } } } })
    if (row && (!store.owner || row.session.ownerInstanceId === store.owner)) return null
    if (store.owner) throw new OwnershipLostError(`turn ${turnId}`)
    throw new Error(`Turn ${turnId} does not exist.`)
  }
  if (!turn.lifecycleOnly) {
    await touchActivity(store, turn.taskId, turn.startedAt)
    // The session's newest dispatched turn is no longer the one the server cut off (MAPPING
    // "interruption"): also a prompt queued before the cut and dispatched after it answers it.
    await store.db.session.updateMany({ where: { id: turn.sessionId, interruption: { not: null } }, data: NO_INTERRUPTION })
  }
  await emit(store, 'turn.changed', turn.taskId, turn.sessionId)
  return turn
}

export async function completeTurn(store: Store, turnId: string, stopReason?: string, completedAt?: Date) {
  const at = completedAt ?? store.now()
  const turn = await store.db.turn.update({ where: { id: turnId }, data: { completedAt: at, stopReason } })
  if (!turn.lifecycleOnly) await touchActivity(store, turn.taskId, at)
  await emit(store, 'turn.completed', turn.taskId, turn.sessionId)
  return turn
}

export function openTurns({ db }: Store, sessionId: string) {
  return db.turn.findMany({ where: { sessionId, completedAt: null } })
}

export function findTurn({ db }: Store, id: string) {
  return db.turn.findUnique({ where: { id } })
}
