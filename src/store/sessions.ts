// Sessions: their rows (launch, state, error, interruption, deletion) and the reads of a session's
// detail (its messages, turns and Git observations, batched over a page of sessions).
import { Prisma } from '../generated/sqlite/client.ts'
import type { Store } from './store.ts'
import type { SessionState } from '../summary/types.ts'
import { AGENT_ACTIVITY, LIVE_SESSION_STATES } from './instances.ts'
import { emit } from './events.ts'
import { fenced, stillOwned } from './fencing.ts'
import { groupBy } from '../util/group-by.ts'
import { wholeContent, wholeContents } from './message-content.ts'

export function findSessions({ db }: Store, ids: readonly string[]) {
  return db.session.findMany({ where: { id: { in: [...ids] } } })
}

/** The newest `last` messages (older than `before` when given), returned oldest first. */
export async function messagesOfSession(store: Store, sessionId: string, last: number, before?: string | null) {
  const { db } = store
  // `before` is a GraphQL Message.id: the client's id for user messages, the row id otherwise.
  const anchor = before ? await db.message.findFirst({ where: { sessionId, OR: [{ clientMessageId: before }, { id: before }] } }) : null
  if (before && !anchor) return null
  const rows = await db.message.findMany({
    where: {
      sessionId,
      ...(anchor && {
        OR: [{ createdAt: { lt: anchor.createdAt } }, { createdAt: anchor.createdAt, id: { lt: anchor.id } }],
      }),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: last,
  })
  return wholeContents(store, rows.reverse())
}

/**
 * The message of a session whose GraphQL Message.id is `id`: the client's id of a user message
 * (unique per workspace), the row id of any other (a row that has a client id answers to that one
 * only). Null when the session has none. Two lookups by unique keys, whatever the session's length.
 */
export async function findMessageOfSession(store: Store, session: { id: string; workspaceId: string }, id: string) {
  const { db } = store
  const [byClientId, byRowId] = await Promise.all([
    db.message.findUnique({ where: { workspaceId_clientMessageId: { workspaceId: session.workspaceId, clientMessageId: id } } }),
    db.message.findUnique({ where: { id } }),
  ])
  if (byClientId?.sessionId === session.id) return wholeContent(store, byClientId)
  if (byRowId?.sessionId === session.id && byRowId.clientMessageId === null) return wholeContent(store, byRowId)
  return null
}

/**
 * Ids of the newest `last` rows of each session, in one window-function query (portable SQLite /
 * PostgreSQL), so a page of session details costs two statements whatever the number of sessions.
 */
async function newestIdsPerSession(
  { db }: Store,
  table: 'Message' | 'Turn',
  timeColumn: 'createdAt' | 'startedAt',
  sessionIds: readonly string[],
  last: number,
): Promise<string[]> {
  if (sessionIds.length === 0 || last === 0) return []
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT "id" FROM (
      SELECT "id", ROW_NUMBER() OVER (PARTITION BY "sessionId" ORDER BY ${Prisma.raw(`"${timeColumn}"`)} DESC, "id" DESC) AS "rank"
      FROM ${Prisma.raw(`"${table}"`)}
      WHERE "sessionId" IN (${Prisma.join([...sessionIds])})
    ) ranked
    WHERE "rank" <= ${last}`
  return rows.map((r) => r.id)
}

/** The newest `last` messages of each session, oldest first. */
export async function latestMessagesOfSessions(store: Store, sessionIds: readonly string[], last: number) {
  const ids = await newestIdsPerSession(store, 'Message', 'createdAt', sessionIds, last)
  const rows = ids.length
    ? await store.db.message.findMany({ where: { id: { in: ids } }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] })
    : []
  return groupBy(await wholeContents(store, rows), (m) => m.sessionId)
}

/** The newest `last` turns of each session, oldest first. */
export async function latestTurnsOfSessions(store: Store, sessionIds: readonly string[], last: number) {
  const ids = await newestIdsPerSession(store, 'Turn', 'startedAt', sessionIds, last)
  const rows = ids.length
    ? await store.db.turn.findMany({ where: { id: { in: ids } }, orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] })
    : []
  return groupBy(rows, (t) => t.sessionId)
}

export function gitOfSessions({ db }: Store, sessionIds: readonly string[]) {
  return db.gitObservation.findMany({
    where: { sessionId: { in: [...sessionIds] } },
    include: { repository: { select: { name: true, position: true } } },
    orderBy: [{ sessionId: 'asc' }, { taskRepositoryId: 'asc' }],
  })
}

export function findSession({ db }: Store, id: string) {
  return db.session.findUnique({ where: { id } })
}

export function getSession({ db }: Store, id: string) {
  return db.session.findUniqueOrThrow({ where: { id } })
}

/** Sessions of a task that are not in a final state. */
export function unfinishedSessionsOfTask({ db }: Store, taskId: string) {
  return db.session.findMany({
    where: { taskId, state: { in: ['CREATED', 'STARTING', 'RUNNING', 'WAITING_FOR_INPUT', 'IDLE'] } },
  })
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

/** What an agent publishes about its session besides the transcript (ACP models, mode, plan). */
export interface SessionPublications {
  currentModelId?: string | null
  availableModels?: { id: string; name: string }[]
  currentModeId?: string | null
  plan?: { content: string; priority: string; status: string }[]
}

export interface SessionChanges extends SessionPublications {
  state?: SessionState
  activeSubagentCount?: number
  backgroundWork?: boolean
  acpSessionId?: string | null
}

/** The columns of the publications given (JSON ones serialized); absent ones are left as they are. */
function publicationColumns(changes: SessionPublications) {
  return {
    ...(changes.currentModelId !== undefined && { currentModelId: changes.currentModelId }),
    ...(changes.availableModels !== undefined && { availableModels: JSON.stringify(changes.availableModels) }),
    ...(changes.currentModeId !== undefined && { currentModeId: changes.currentModeId }),
    ...(changes.plan !== undefined && { plan: JSON.stringify(changes.plan) }),
  }
}

/**
 * Records what the agent published. No source event: none of it is an input of the task summary,
 * so no projection runs and no activity time moves (the session's stream tells its followers).
 */
export async function setSessionPublications(store: Store, sessionId: string, changes: SessionPublications): Promise<void> {
  await fenced(store, `session ${sessionId}`, () =>
    store.db.session.update({
      where: { id: sessionId, ...stillOwned(store) },
      data: publicationColumns(changes),
      select: { id: true },
    }),
  )
}

export async function updateSession(store: Store, sessionId: string, changes: SessionChanges) {
  const session = await fenced(store, `session ${sessionId}`, () => store.db.session.update({
    where: { id: sessionId, ...stillOwned(store) },
    data: {
      ...(changes.state !== undefined && { state: changes.state }),
      ...(changes.activeSubagentCount !== undefined && { activeSubagentCount: changes.activeSubagentCount }),
      ...(changes.backgroundWork !== undefined && { backgroundWork: changes.backgroundWork }),
      ...(changes.acpSessionId !== undefined && { acpSessionId: changes.acpSessionId }),
      ...publicationColumns(changes),
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

export const NO_INTERRUPTION = { interruption: null, interruptedAt: null } as const

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
