// Messages: their rows (inserted, updated, deleted, looked up). A streamed message's appends are
// message-content.ts's: every row read here comes back with its whole content from there.
import type { Store } from './store.ts'
import { emit } from './events.ts'
import { assertOwned, fenced, stillOwned } from './fencing.ts'
import { touchActivity } from './tasks.ts'
import { wholeContent } from './message-content.ts'

/** A message row without its content: what a streamed update needs when the client follows appends. */
export function findMessageWithoutContent({ db }: Store, id: string) {
  return db.message.findUnique({ where: { id }, omit: { content: true } })
}

export async function messageContent(store: Store, id: string): Promise<string | undefined> {
  const row = await store.db.message.findUnique({ where: { id }, select: { id: true, content: true, appendedChunks: true } })
  return (await wholeContent(store, row))?.content
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
  const update = () =>
    store.db.message.update({
      where: { id: messageId, session: stillOwned(store) },
      // New content replaces the appended text too (its chunks go in the same transaction).
      data: { ...changes, ...(changes.content !== undefined && { appendedChunks: 0 }), version: { increment: 1 }, updatedAt: store.now() },
    })
  const message = await fenced(store, `message ${messageId}`, async () => {
    if (changes.content === undefined) return update()
    const [, updated] = await store.db.$transaction([store.db.messageChunk.deleteMany({ where: { messageId } }), update()])
    return updated
  })
  await emit(store, 'message.updated', message.taskId, message.sessionId)
  return wholeContent(store, message) as Promise<typeof message>
}

export async function deleteMessage(store: Store, messageId: string) {
  const message = await store.db.message.delete({ where: { id: messageId } })
  await emit(store, 'message.deleted', message.taskId, message.sessionId)
  return message
}

export async function findMessage(store: Store, id: string) {
  return wholeContent(store, await store.db.message.findUnique({ where: { id } }))
}

export async function findToolCallMessage(store: Store, sessionId: string, toolCallId: string) {
  return wholeContent(store, await store.db.message.findFirst({ where: { sessionId, toolCallId }, orderBy: { createdAt: 'desc' } }))
}

export async function findPendingRequest(store: Store, sessionId: string, pendingId: string) {
  return wholeContent(
    store,
    await store.db.message.findFirst({ where: { sessionId, pendingId, kind: { in: ['PERMISSION_REQUEST', 'CLARIFICATION'] } } }),
  )
}

/** Requests nobody can answer any more (the agent stopped or died) end as CANCELLED. */
export async function cancelPendingRequests(store: Store, sessionId: string) {
  const pending = await store.db.message.findMany({
    where: { sessionId, status: 'PENDING', kind: { in: ['PERMISSION_REQUEST', 'CLARIFICATION'] } },
    select: { id: true },
  })
  for (const message of pending) await updateMessage(store, message.id, { status: 'CANCELLED' })
  return pending.length
}
