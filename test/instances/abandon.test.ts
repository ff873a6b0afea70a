// An instance that finds another one owns its session now (it stalled past its lease) ends the
// agent without writing: the new owner has recovered the records, and a second writer would
// corrupt them.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { AddMessageDocument, CreateTaskDocument, StartSessionDocument } from '../generated/graphql.ts'

describe('abandoning a session taken over elsewhere (sqlite)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite')
  })
  afterAll(() => server?.close())

  it('ends the agent mid-turn and writes nothing more: no final state, no closed turn, no further message', async () => {
    const { token, workspaceId } = await userWithWorkspace(server, 'u')
    const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 't' } })).createTask.id
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const content = JSON.stringify({ script: [{ say: 'first' }, { sleep: 60_000 }, { say: 'second' }] })
    await ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
    const db = server.store.db
    await eventually(async () => (await db.message.count({ where: { sessionId, author: 'AGENT', content: 'first' } })) === 1)
    const runtime = server.sessions.runtime(sessionId)!
    const messagesBefore = await db.message.findMany({ where: { sessionId }, orderBy: { createdAt: 'asc' } })

    await server.sessions.abandon([sessionId])
    await runtime.ended
    expect(server.sessions.runtime(sessionId)).toBeUndefined()
    expect(runtime.agent.stopping).toBe(true)
    const after = await db.session.findUniqueOrThrow({ where: { id: sessionId }, include: { turns: true } })
    expect(after.state).toBe('RUNNING')
    expect(after.turns.filter((t) => t.completedAt === null)).toHaveLength(1)
    expect(await db.message.findMany({ where: { sessionId }, orderBy: { createdAt: 'asc' } })).toEqual(messagesBefore)
  })
})
