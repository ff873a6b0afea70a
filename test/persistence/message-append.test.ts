import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS, migratedDatabase } from '../support/databases.ts'
import { Prisma } from '../../src/generated/sqlite/client.ts'
import { connectDatabase, type Db } from '../../src/store/db.ts'
import { createStore, type SourceEvent, type Store } from '../../src/store/store.ts'
import { findMessage, insertMessage, messageContent, updateMessage } from '../../src/store/messages.ts'
import { appendMessageContent } from '../../src/store/message-content.ts'
import { createSession, findMessageOfSession, latestMessagesOfSessions, messagesOfSession } from '../../src/store/sessions.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createUserWithToken } from '../../src/store/users.ts'
import { createWorkspace } from '../../src/store/workspaces.ts'

describe.each(PROVIDERS)('appendMessageContent (%s)', (provider) => {
  let db: Db
  let store: Store
  let clock = new Date('2026-01-01T00:00:00.000Z')
  let sessionId: string

  beforeAll(async () => {
    db = await connectDatabase(provider, await migratedDatabase(provider))
    store = createStore(db, () => clock)
    const { user } = await createUserWithToken(db, 'owner')
    const workspace = await createWorkspace(store, 'W', user.id)
    const task = await createTask(store, { workspaceId: workspace.id, title: 't', repositories: [] })
    sessionId = (await createSession(store, { taskId: task.id, agentProfile: 'mock' })).id
  })
  afterAll(() => db?.$disconnect())

  const agentMessage = (content: string) =>
    insertMessage(store, { id: randomUUID(), sessionId, author: 'AGENT', kind: 'MESSAGE', content, status: 'IN_PROGRESS' })

  it('appends at the database: content grows exactly, version counts each append, updatedAt reads back as the Date written, no source event', async () => {
    const message = await agentMessage('0;')
    const events: SourceEvent[] = []
    const off = store.events.on((e) => events.push(e))
    let expected = '0;'
    // Astral characters and quotes: the SQL text is a parameter, never spliced.
    const pieces = ['1;', "it's \"quoted\" ", '😀 ', 'x'.repeat(10_000), "'); DROP TABLE \"Message\"; --"]
    for (const [i, piece] of pieces.entries()) {
      clock = new Date(Date.UTC(2026, 0, 1, 0, 0, i + 1))
      const result = await appendMessageContent(store, message.id, piece)
      expected += piece
      expect(result).toEqual({ messageId: message.id, sessionId, taskId: message.taskId, version: i + 2 })
    }
    off()
    const row = (await findMessage(store, message.id))!
    expect(row.content).toBe(expected)
    expect(row.version).toBe(pieces.length + 1)
    expect(row.updatedAt).toEqual(clock)
    // Stored in Prisma's own encoding: its date comparisons see the raw write.
    expect(await db.message.count({ where: { id: message.id, updatedAt: { gte: clock } } })).toBe(1)
    expect(await db.message.count({ where: { id: message.id, updatedAt: { lt: clock } } })).toBe(0)
    // Content only: no summary input changes, so no source event (test/projector/stream-appends.test.ts).
    expect(events).toEqual([])
  })

  it('writes only the new bytes: the row keeps its inserted content, each append is a chunk row of its own text', async () => {
    const message = await agentMessage('head;')
    const pieces = ['a'.repeat(100_000), 'b;', 'c😀']
    for (const piece of pieces) await appendMessageContent(store, message.id, piece)
    const row = await db.message.findUniqueOrThrow({ where: { id: message.id } })
    // Rewriting the content (`content || text`) would have grown the row by every append.
    expect(row.content).toBe('head;')
    expect(row.appendedChunks).toBe(3)
    const chunks = await db.messageChunk.findMany({ where: { messageId: message.id }, orderBy: { seq: 'asc' } })
    expect(chunks.map((c) => [c.seq, c.text])).toEqual([
      [1, pieces[0]],
      [2, pieces[1]],
      [3, pieces[2]],
    ])
  })

  it('every read of a message returns its whole content, exactly', async () => {
    const session = await db.session.findUniqueOrThrow({ where: { id: sessionId }, include: { task: true } })
    const plain = await agentMessage('whole')
    const streamed = await agentMessage('0;')
    let expected = '0;'
    for (let i = 1; i <= 40; i++) {
      const piece = `${i};`.repeat(i * 50)
      await appendMessageContent(store, streamed.id, piece)
      expected += piece
    }
    expect(await messageContent(store, streamed.id)).toBe(expected)
    expect((await findMessage(store, streamed.id))!.content).toBe(expected)
    expect((await findMessageOfSession(store, { id: sessionId, workspaceId: session.task.workspaceId }, streamed.id))!.content).toBe(expected)
    const page = (await messagesOfSession(store, sessionId, 1000))!
    expect(page.find((m) => m.id === streamed.id)!.content).toBe(expected)
    expect(page.find((m) => m.id === plain.id)!.content).toBe('whole')
    const latest = (await latestMessagesOfSessions(store, [sessionId], 1000)).get(sessionId)!
    expect(latest.find((m) => m.id === streamed.id)!.content).toBe(expected)
  })

  it('new content replaces the appended text too; appends after it follow the new content', async () => {
    const message = await agentMessage('old;')
    await appendMessageContent(store, message.id, 'appended;')
    const replaced = await updateMessage(store, message.id, { content: 'new;' })
    expect(replaced.content).toBe('new;')
    expect(await db.messageChunk.count({ where: { messageId: message.id } })).toBe(0)
    const after = await appendMessageContent(store, message.id, 'more')
    expect(after?.version).toBe(replaced.version + 1)
    expect(await messageContent(store, message.id)).toBe('new;more')
    // A status change keeps the chunks.
    await updateMessage(store, message.id, { status: 'COMPLETED' })
    expect(await messageContent(store, message.id)).toBe('new;more')
  })

  it('chunks go with their message', async () => {
    const message = await agentMessage('x')
    await appendMessageContent(store, message.id, 'y')
    await db.message.delete({ where: { id: message.id } })
    expect(await db.messageChunk.count({ where: { messageId: message.id } })).toBe(0)
  })

  it('leaves every other message alone', async () => {
    const [a, b] = [await agentMessage('a'), await agentMessage('b')]
    await appendMessageContent(store, a.id, '+')
    expect(await db.message.findUniqueOrThrow({ where: { id: b.id } })).toEqual(b)
    // The raw write stores updatedAt as Prisma does (same SQL type and text shape), so ordering and filters agree.
    const stored = await db.$queryRaw<{ id: string; kind: string; shape: string }[]>`
      SELECT "id", ${provider === 'sqlite' ? Prisma.raw('typeof("updatedAt")') : Prisma.raw('pg_typeof("updatedAt")::text')} AS "kind",
        CAST("updatedAt" AS TEXT) AS "shape"
      FROM "Message" WHERE "id" IN (${a.id}, ${b.id})`
    const shape = (text: string) => text.replace(/[0-9]/g, '9')
    const [x, y] = stored
    expect(x!.kind).toBe(y!.kind)
    expect(shape(x!.shape)).toBe(shape(y!.shape))
  })

  it('is undefined for a message that no longer exists, and emits nothing', async () => {
    const events: SourceEvent[] = []
    const off = store.events.on((e) => events.push(e))
    expect(await appendMessageContent(store, 'gone', 'text')).toBeUndefined()
    off()
    expect(events).toEqual([])
  })
})
