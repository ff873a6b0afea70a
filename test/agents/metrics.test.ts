import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  SessionDetailDocument,
  StartSessionDocument,
  StopSessionDocument,
} from '../generated/graphql.ts'

describe('agent metrics keep bounded labels (sqlite)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite')
  })
  afterAll(() => server?.close())

  it('/metrics of a server that ran sessions has no session label, only totals and the stream kind', async () => {
    const token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'dev' })).createUser.token
    const workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: 'm' })).createWorkspace.id
    const sessionIds: string[] = []
    for (const title of ['a', 'b']) {
      const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask.id
      const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
      sessionIds.push(sessionId)
      const content = JSON.stringify({ script: [{ think: 'reasoning in parts', chunks: 4 }, { say: 'an answer in parts', chunks: 4 }] })
      await ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
      await eventually(async () => {
        const s = (await ok(server.graphqlUrl, token, SessionDetailDocument, { id: sessionId, last: 100 })).session!
        return s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt)
      })
    }
    const live = await (await fetch(`${server.url}/metrics`)).text()
    // One session stopped, one still live: neither leaves a per-session series.
    await ok(server.graphqlUrl, token, StopSessionDocument, { id: sessionIds[0]! })
    const after = await (await fetch(`${server.url}/metrics`)).text()
    for (const text of [live, after]) {
      expect(text).not.toMatch(/session="/)
      for (const id of sessionIds) expect(text).not.toContain(id)
    }
    expect(live).toMatch(/agent_chunks_received_total\{kind="MESSAGE"\} [1-9]/)
    expect(live).toMatch(/agent_chunks_received_total\{kind="REASONING"\} [1-9]/)
    expect(live).toMatch(/agent_stream_publications_total [0-9]/)
  })
})
