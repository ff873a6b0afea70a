// Writes to the runtime records of a task: sessions, turns, messages, Git observations, launch
// errors (pull-request observations are in pull-requests.ts). Each emits a source event after it
// commits; the projector re-derives the task's summary from these records.
import { randomUUID } from 'node:crypto'
import { OwnershipLostError, type Store, type SourceEventKind } from './store.ts'
import { AGENT_ACTIVITY, LIVE_SESSION_STATES } from './instances.ts'
import type { SessionState } from '../summary/types.ts'
import type { GitObservation } from '../summary/inputs.ts'

async function workspaceOf({ db }: Store, taskId: string): Promise<string> {
  return (await db.task.findUniqueOrThrow({ where: { id: taskId }, select: { workspaceId: true } })).workspaceId
}

export async function emit(store: Store, kind: SourceEventKind, taskId: string, sessionId?: string) {
  store.events.emit({ kind, taskId, workspaceId: await workspaceOf(store, taskId), sessionId })
}

/** The condition a fenced store (Store.owner) adds to a session's row: still owned by that instance. */
export function stillOwned(store: Store): { ownerInstanceId?: string } {
  return store.owner ? { ownerInstanceId: store.owner } : {}
}

/**
 * A fenced update of one row: Prisma answers P2025 when the row's condition (the owner among it)
 * matches nothing, which for a fenced store means the session is another instance's now (or gone).
 */
export async function fenced<T>(store: Store, subject: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (store.owner && (error as { code?: string }).code === 'P2025') throw new OwnershipLostError(subject)
    throw error
  }
}

/**
 * Inside a write's transaction: the session is still the fenced store's. The row is written (to
 * itself), so on PostgreSQL a concurrent takeover's claim waits for this transaction, and a
 * claim that came first makes it match nothing and roll back.
 */
async function assertOwned(tx: Pick<Store['db'], 'session'>, store: Store, sessionId: string): Promise<void> {
  if (!store.owner) return
  const { count } = await tx.session.updateMany({ where: { id: sessionId, ownerInstanceId: store.owner }, data: { ownerInstanceId: store.owner } })
  if (count === 0) throw new OwnershipLostError(`session ${sessionId}`)
}

/** Moves the task's activity time forward (never back) for prompts and conversational turns. */
async function touchActivity(store: Store, taskId: string, at: Date) {
  await store.db.task.updateMany({ where: { id: taskId, lastActivityAt: { lt: at } }, data: { lastActivityAt: at } })
}

export async function createSession(
  store: Store,
  input: {
    /** The id the session's agent was launched under (startSession launches before the row exists). */
    id?: string
    taskId: string
    agentProfile: string
    isPrimary?: boolean
    state?: SessionState
    workingDirectory?: string
    ownerInstanceId?: string
  },
) {
  const now = store.now()
  const session = await store.db.$transaction(async (tx) => {
    const hasPrimary = await tx.session.count({ where: { taskId: input.taskId, isPrimary: true } })
    return tx.session.create({
      data: {
        ...(input.id && { id: input.id }),
        taskId: input.taskId,
        agentProfile: input.agentProfile,
        state: input.state ?? 'CREATED',
        isPrimary: input.isPrimary ?? hasPrimary === 0,
        workingDirectory: input.workingDirectory,
        ownerInstanceId: input.ownerInstanceId ?? null,
        createdAt: now,
        updatedAt: now,
      },
    })
  })
  await emit(store, 'session.created', session.taskId, session.id)
  return session
}

export interface SessionChanges {
  state?: SessionState
  activeSubagentCount?: number
  backgroundWork?: boolean
  acpSessionId?: string | null
  currentModelId?: string | null
  availableModels?: { id: string; name: string }[]
}

export async function updateSession(store: Store, sessionId: string, changes: SessionChanges) {
  const session = await fenced(store, `session ${sessionId}`, () => store.db.session.update({
    where: { id: sessionId, ...stillOwned(store) },
    data: {
      ...(changes.state !== undefined && { state: changes.state }),
      ...(changes.activeSubagentCount !== undefined && { activeSubagentCount: changes.activeSubagentCount }),
      ...(changes.backgroundWork !== undefined && { backgroundWork: changes.backgroundWork }),
      ...(changes.acpSessionId !== undefined && { acpSessionId: changes.acpSessionId }),
      ...(changes.currentModelId !== undefined && { currentModelId: changes.currentModelId }),
      ...(changes.availableModels !== undefined && { availableModels: JSON.stringify(changes.availableModels) }),
      updatedAt: store.now(),
    },
  }))
  await emit(store, 'session.changed', session.taskId, session.id)
  return session
}

/** Records the session's current recoverable error. A stamp that was already cleared stays cleared. */
export async function setSessionError(
  store: Store,
  sessionId: string,
  error: { code: string; message: string; stamp: string; occurredAt: Date },
) {
  const session = await fenced(store, `session ${sessionId}`, () => store.db.session.update({
    where: { id: sessionId, ...stillOwned(store) },
    data: {
      errorCode: error.code,
      errorMessage: error.message,
      errorStamp: error.stamp,
      errorOccurredAt: error.occurredAt,
      updatedAt: store.now(),
    },
  }))
  await emit(store, 'session.changed', session.taskId, session.id)
  return session
}

/** Dismissal or a newer agent response: the error goes, and its stamp is remembered as cleared. */
export async function clearSessionError(store: Store, sessionId: string) {
  const current = await store.db.session.findUniqueOrThrow({ where: { id: sessionId } })
  if (!current.errorStamp) return current
  const session = await fenced(store, `session ${sessionId}`, () => store.db.session.update({
    where: { id: sessionId, ...stillOwned(store) },
    data: {
      errorClearedStamp: current.errorStamp,
      errorCode: null,
      errorMessage: null,
      errorStamp: null,
      errorOccurredAt: null,
      updatedAt: store.now(),
    },
  }))
  await emit(store, 'session.changed', session.taskId, session.id)
  return session
}

/** Deleting a session removes its error from the summary at once (the projector re-derives). */
export async function deleteSession(store: Store, sessionId: string) {
  const session = await store.db.session.delete({ where: { id: sessionId } })
  await emit(store, 'session.deleted', session.taskId, session.id)
  return session
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
  if (!turn.lifecycleOnly) await touchActivity(store, turn.taskId, turn.startedAt)
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

export interface NewMessage {
  id: string
  sessionId: string
  turnId?: string | null
  author: 'USER' | 'AGENT' | 'SYSTEM'
  kind: 'MESSAGE' | 'REASONING' | 'TOOL_CALL' | 'PERMISSION_REQUEST' | 'CLARIFICATION' | 'ERROR' | 'STATUS'
  content: string
  status?: string | null
  pendingId?: string | null
  toolCallId?: string | null
  metadata?: string | null
  createdAt?: Date
}

export async function addMessage(store: Store, input: NewMessage) {
  const session = await store.db.session.findUniqueOrThrow({ where: { id: input.sessionId } })
  const at = input.createdAt ?? store.now()
  const message = await store.db.$transaction(async (tx) => {
    await assertOwned(tx, store, session.id)
    const created = await tx.message.create({
      data: { ...input, taskId: session.taskId, createdAt: at, updatedAt: at, version: 1 },
    })
    // A message makes its turn authoritative for good: deleting it later cannot move the boundary back.
    if (input.turnId)
      await tx.turn.updateMany({
        where: { id: input.turnId, promptDispatchPending: true },
        data: { promptDispatchPending: false },
      })
    return created
  })
  if (input.author === 'USER') await touchActivity(store, session.taskId, at)
  await emit(store, 'message.added', session.taskId, session.id)
  return message
}

export async function updateMessage(
  store: Store,
  messageId: string,
  changes: { content?: string; status?: string | null; metadata?: string | null },
) {
  const message = await fenced(store, `message ${messageId}`, () =>
    store.db.message.update({
      where: { id: messageId, session: stillOwned(store) },
      data: { ...changes, version: { increment: 1 }, updatedAt: store.now() },
    }),
  )
  await emit(store, 'message.updated', message.taskId, message.sessionId)
  return message
}

export async function deleteMessage(store: Store, messageId: string) {
  const message = await store.db.message.delete({ where: { id: messageId } })
  await emit(store, 'message.deleted', message.taskId, message.sessionId)
  return message
}

export type GitObservationInput = Omit<GitObservation, 'observedAt'> & { observedAt?: Date }

/** The latest observation per session + repository (a keyed upsert: siblings are untouched). */
export async function recordGitObservation(store: Store, o: GitObservationInput) {
  const repository = await store.db.taskRepository.findUniqueOrThrow({ where: { id: o.taskRepositoryId } })
  const data = { ...o, taskId: repository.taskId, observedAt: o.observedAt ?? store.now() }
  const row = await store.db.gitObservation.upsert({
    where: { sessionId_taskRepositoryId: { sessionId: o.sessionId, taskRepositoryId: o.taskRepositoryId } },
    create: data,
    update: data,
  })
  await emit(store, 'git.observed', repository.taskId, o.sessionId)
  return row
}

export async function setLaunchError(
  store: Store,
  taskId: string,
  error: {
    stamp: string
    message: string
    category?: string | null
    recoveryActions?: string[] | string
    taskRepositoryId?: string | null
    occurredAt?: Date
  },
) {
  const data = {
    stamp: error.stamp,
    message: error.message,
    category: error.category ?? null,
    recoveryActions:
      typeof error.recoveryActions === 'string' ? error.recoveryActions : JSON.stringify(error.recoveryActions ?? []),
    taskRepositoryId: error.taskRepositoryId ?? null,
    occurredAt: error.occurredAt ?? store.now(),
    clearedAt: null,
  }
  await store.db.taskLaunchError.upsert({ where: { taskId }, create: { taskId, ...data }, update: data })
  await emit(store, 'launchError.changed', taskId)
}

/** A successful launch or recovery clears the task-owned launch error. */
export async function clearLaunchError(store: Store, taskId: string) {
  const { count } = await store.db.taskLaunchError.updateMany({
    where: { taskId, clearedAt: null },
    data: { clearedAt: store.now() },
  })
  if (count > 0) await emit(store, 'launchError.changed', taskId)
}

const NO_INTERRUPTION = { interruption: null, interruptedAt: null } as const

/** resumeSession answers the summary's interruption, as the user's next prompt does. */
export async function clearInterruption(store: Store, sessionId: string) {
  const [session] = await store.db.session.updateManyAndReturn({
    where: { id: sessionId, interruption: { not: null } },
    data: NO_INTERRUPTION,
    select: { taskId: true },
  })
  if (session) await emit(store, 'session.changed', session.taskId, sessionId)
}

/** Sessions a dead process left mid-launch or mid-turn, or with subagents or background work its agent carried. */
export function strandedSessions({ db }: Store) {
  return db.session.findMany({
    where: { OR: [{ state: { in: LIVE_SESSION_STATES } }, ...AGENT_ACTIVITY] },
    select: { id: true, agentProfile: true },
  })
}

/**
 * Stores a user prompt under its client-generated id together with the turn it starts, in one
 * transaction. (workspace, clientMessageId) is unique, so of concurrent requests with one id in
 * one workspace (on any instance) exactly one inserts; the others get `undefined` and replay the
 * stored message. The row's own id is the server's.
 */
export async function acceptUserPrompt(store: Store, input: { clientMessageId: string; sessionId: string; content: string }) {
  const session = await store.db.session.findUniqueOrThrow({ where: { id: input.sessionId } })
  const workspaceId = await workspaceOf(store, session.taskId)
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
          workspaceId,
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
    await emit(store, 'message.added', session.taskId, session.id)
    await emit(store, 'turn.started', session.taskId, session.id)
    return { message, turn }
  } catch (error) {
    if ((error as { code?: string }).code === 'P2002') return undefined
    throw error
  }
}

export function findMessage({ db }: Store, id: string) {
  return db.message.findUnique({ where: { id } })
}

/** The user message a client id names in a workspace (ids of other workspaces are not visible here). */
export async function findUserMessage(store: Store, taskId: string, clientMessageId: string) {
  const workspaceId = await workspaceOf(store, taskId)
  return store.db.message.findUnique({ where: { workspaceId_clientMessageId: { workspaceId, clientMessageId } } })
}

export function findToolCallMessage({ db }: Store, sessionId: string, toolCallId: string) {
  return db.message.findFirst({ where: { sessionId, toolCallId }, orderBy: { createdAt: 'desc' } })
}

export function findPendingRequest({ db }: Store, sessionId: string, pendingId: string) {
  return db.message.findFirst({
    where: { sessionId, pendingId, kind: { in: ['PERMISSION_REQUEST', 'CLARIFICATION'] } },
  })
}

/** Requests nobody can answer any more (the agent stopped or died) end as CANCELLED. */
export async function cancelPendingRequests(store: Store, sessionId: string) {
  const pending = await store.db.message.findMany({
    where: { sessionId, status: 'PENDING', kind: { in: ['PERMISSION_REQUEST', 'CLARIFICATION'] } },
  })
  for (const message of pending) await updateMessage(store, message.id, { status: 'CANCELLED' })
  return pending.length
}

export function openTurns({ db }: Store, sessionId: string) {
  return db.turn.findMany({ where: { sessionId, completedAt: null } })
}

export function findTurn({ db }: Store, id: string) {
  return db.turn.findUnique({ where: { id } })
}
