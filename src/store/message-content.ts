// A message's content as stored: the text it was inserted (or last replaced) with in its row, then
// each append in a MessageChunk row of its own. An append writes only its own bytes, whatever the
// message's length: rewriting the content (`content || text`) cost SQLite the whole row on the event
// loop (7–10 ms at 1 MB, 25–60 ms at 3 MB) and PostgreSQL a new TOAST value per append. Every read
// of a message row comes through wholeContents/wholeContent, so a reader sees the content exactly
// as the appends made it.
import { Prisma } from '../generated/sqlite/client.ts'
import { providerOf } from './db.ts'
import { OwnershipLostError, type Store } from './store.ts'

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
 * Appends `text` to a message: one chunk row, and the message's version, chunk count and
 * updatedAt, in one transaction. The chunk's `seq` is the version the append moved from, so
 * chunks in `seq` order are the appends in order. Undefined when the message no longer exists
 * (deleted with its session meanwhile).
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
  const rows = providerOf(store.db) === 'postgres' ? await appendOnPostgres(store, messageId, text) : await appendOnSqlite(store, messageId, text)
  const row = rows[0]
  if (!row) {
    // Nothing matched: gone with its session (nobody to tell), or its session is another instance's now.
    if (store.owner && (await store.db.message.count({ where: { id: messageId } })) > 0) throw new OwnershipLostError(`message ${messageId}`)
    return undefined
  }
  return { messageId, sessionId: row.sessionId, taskId: row.taskId, version: Number(row.version) }
}

/** Fenced (Store.owner): the session's owner is part of the statement itself, no extra round trip. */
function ownedHere(store: Store): Prisma.Sql {
  return store.owner
    ? Prisma.sql`AND EXISTS (SELECT 1 FROM "Session" WHERE "Session"."id" = "Message"."sessionId" AND "Session"."ownerInstanceId" = ${store.owner})`
    : Prisma.empty
}

/**
 * One statement: the chunk is inserted from the very row the UPDATE changed (and locked), so an
 * ownership that moves between two statements can never leave a chunk without its version.
 */
function appendOnPostgres(store: Store, messageId: string, text: string) {
  return store.db.$queryRaw<AppendedRow[]>`
    WITH "appended" AS (
      UPDATE "Message"
      SET "version" = "version" + 1, "appendedChunks" = "appendedChunks" + 1, "updatedAt" = ${store.now()}
      WHERE "id" = ${messageId} ${ownedHere(store)}
      RETURNING "id", "version", "sessionId", "taskId"
    ), "chunk" AS (
      INSERT INTO "MessageChunk" ("messageId", "seq", "text") SELECT "id", "version" - 1, ${text} FROM "appended"
    )
    SELECT "version", "sessionId", "taskId" FROM "appended"`
}

/**
 * SQLite has no data-modifying CTE: two statements in one transaction. The first takes the
 * database's write lock, so no other writer (another process's takeover included) runs between
 * them, and the INSERT copies exactly the row the UPDATE changes.
 */
async function appendOnSqlite(store: Store, messageId: string, text: string) {
  const owned = ownedHere(store)
  const [, rows] = await store.db.$transaction([
    store.db.$executeRaw`
      INSERT INTO "MessageChunk" ("messageId", "seq", "text")
      SELECT "id", "version", ${text} FROM "Message" WHERE "id" = ${messageId} ${owned}`,
    store.db.$queryRaw<AppendedRow[]>`
      UPDATE "Message"
      SET "version" = "version" + 1, "appendedChunks" = "appendedChunks" + 1, "updatedAt" = ${store.now()}
      WHERE "id" = ${messageId} ${owned}
      RETURNING "version", "sessionId", "taskId"`,
  ])
  return rows
}

interface StoredContent {
  id: string
  content: string
  appendedChunks: number
}

/**
 * The rows with their whole content: each one's inserted content followed by its chunks in
 * order. One statement for the chunks of every row that has any, joined by the database (one row
 * per message crosses the driver, whatever the number of its chunks); none when no row has any.
 * `string_agg(… ORDER BY …)` is the same in PostgreSQL and SQLite (≥ 3.44).
 */
export async function wholeContents<Row extends StoredContent>({ db }: Pick<Store, 'db'>, rows: Row[]): Promise<Row[]> {
  const appended = rows.filter((r) => r.appendedChunks > 0).map((r) => r.id)
  if (appended.length === 0) return rows
  const joined = await db.$queryRaw<{ messageId: string; text: string }[]>`
    SELECT "messageId", string_agg("text", '' ORDER BY "seq") AS "text"
    FROM "MessageChunk" WHERE "messageId" IN (${Prisma.join(appended)})
    GROUP BY "messageId"`
  const texts = new Map(joined.map((j) => [j.messageId, j.text]))
  return rows.map((r) => {
    const text = texts.get(r.id)
    return text === undefined ? r : { ...r, content: r.content + text }
  })
}

/** One row (or none) with its whole content. */
export async function wholeContent<Row extends StoredContent>(store: Pick<Store, 'db'>, row: Row | null): Promise<Row | null> {
  return row && (await wholeContents(store, [row]))[0]!
}
