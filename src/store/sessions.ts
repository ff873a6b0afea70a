import type { Store } from './store.ts'

export function findSessions({ db }: Store, ids: readonly string[]) {
  return db.session.findMany({ where: { id: { in: [...ids] } } })
}

/** The newest `last` messages (older than `before` when given), returned oldest first. */
export async function messagesOfSession({ db }: Store, sessionId: string, last: number, before?: string | null) {
  const anchor = before ? await db.message.findFirst({ where: { id: before, sessionId } }) : null
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

/** The newest `last` turns, oldest first. */
export async function turnsOfSession({ db }: Store, sessionId: string, last: number) {
  const rows = await db.turn.findMany({
    where: { sessionId },
    orderBy: [{ startedAt: 'desc' }, { id: 'desc' }],
    take: last,
  })
  return rows.reverse()
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
