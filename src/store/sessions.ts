import { Prisma } from '../generated/sqlite/client.ts'
import type { Store } from './store.ts'
import { groupBy } from '../util/group-by.ts'

export function findSessions({ db }: Store, ids: readonly string[]) {
  return db.session.findMany({ where: { id: { in: [...ids] } } })
}

/** The newest `last` messages (older than `before` when given), returned oldest first. */
export async function messagesOfSession({ db }: Store, sessionId: string, last: number, before?: string | null) {
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
  return rows.reverse()
}

/**
 * The message of a session whose GraphQL Message.id is `id`: the client's id of a user message
 * (unique per workspace), the row id of any other (a row that has a client id answers to that one
 * only). Null when the session has none. Two lookups by unique keys, whatever the session's length.
 */
export async function findMessageOfSession({ db }: Store, session: { id: string; workspaceId: string }, id: string) {
  const [byClientId, byRowId] = await Promise.all([
    db.message.findUnique({ where: { workspaceId_clientMessageId: { workspaceId: session.workspaceId, clientMessageId: id } } }),
    db.message.findUnique({ where: { id } }),
  ])
  if (byClientId?.sessionId === session.id) return byClientId
  if (byRowId?.sessionId === session.id && byRowId.clientMessageId === null) return byRowId
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
  return groupBy(rows, (m) => m.sessionId)
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
