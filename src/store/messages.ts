// Messages: their rows (inserted, updated, deleted, looked up) and the streaming writes of their
// content. A long agent stream appends at the database instead of
// rewriting the row from the process: each window sends only its own text to the store, so no
// write (and no Prisma query argument) ever carries, or reads back, the whole content.
import { OwnershipLostError, type Store } from './store.ts'
import { emit } from './events.ts'
import { assertOwned, fenced, stillOwned } from './fencing.ts'
import { touchActivity } from './tasks.ts'

interface AppendedRow {
  version: number | bigint
  sessionId: string
  taskId: string
}

export interface AppendResult {
  messageId: string
  sessionId: string
  taskId: string
  /** The message's version after the append: the content at `version - 1` plus the text is the content at `version`. */
  version: number
}

/**
 * Appends `text` to a message's content in one statement (content, version and updatedAt move
 * together). Undefined when the message no longer exists (deleted with its session meanwhile).
 *
 * No source event: an append changes a message's content, version and updatedAt only, and no task
 * summary is derived from any of them (src/store/summary-sources.ts reads a message's kind,
 * status, pendingId, turn, author and createdAt), so the projection an event would start could only
 * find the summary current. With one such projection (a dozen statements) per 100 ms window of
 * every streaming session, the server's main thread, which runs SQLite synchronously, spent its
 * time re-deriving unchanged summaries instead of answering requests (bench P10). The message's
 * creation (message.added) and every change of its status (updateMessage, a turn's end in
 * turns.ts: message.updated) still reach the projector.
 */
export async function appendMessageContent(store: Store, messageId: string, text: string): Promise<AppendResult | undefined> {
  // Quoted identifiers and `||` are the same in SQLite and PostgreSQL; RETURNING too (SQLite ≥ 3.35).
  // Fenced (Store.owner), the session's owner is part of the same statement: no extra round trip.
  const rows = store.owner
    ? await store.db.$queryRaw<AppendedRow[]>`
        UPDATE "Message"
        SET "content" = "content" || ${text}, "version" = "version" + 1, "updatedAt" = ${store.now()}
        WHERE "id" = ${messageId}
          AND EXISTS (SELECT 1 FROM "Session" WHERE "Session"."id" = "Message"."sessionId" AND "Session"."ownerInstanceId" = ${store.owner})
        RETURNING "version", "sessionId", "taskId"`
    : await store.db.$queryRaw<AppendedRow[]>`
        UPDATE "Message"
        SET "content" = "content" || ${text}, "version" = "version" + 1, "updatedAt" = ${store.now()}
        WHERE "id" = ${messageId}
        RETURNING "version", "sessionId", "taskId"`
  const row = rows[0]
  if (!row) {
    // Nothing matched: gone with its session (nobody to tell), or its session is another instance's now.
    if (store.owner && (await store.db.message.count({ where: { id: messageId } })) > 0) throw new OwnershipLostError(`message ${messageId}`)
    return undefined
  }
  return { messageId, sessionId: row.sessionId, taskId: row.taskId, version: Number(row.version) }
}

/** A message row without its content: what a streamed update needs when the client follows appends. */
export function findMessageWithoutContent({ db }: Store, id: string) {
  return db.message.findUnique({ where: { id }, omit: { content: true } })
}

export async function messageContent({ db }: Store, id: string): Promise<string | undefined> {
  return (await db.message.findUnique({ where: { id }, select: { content: true } }))?.content
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

/** Inserts one message row (an agent's, or a system one); a user's prompt is insertPrompt's (prompts.ts). */
export async function insertMessage(store: Store, input: NewMessage) {
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

export function findMessage({ db }: Store, id: string) {
  return db.message.findUnique({ where: { id } })
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
