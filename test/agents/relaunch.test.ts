import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { stoppedServerWithSession } from '../support/fixtures.ts'
import {
  AddMessageDocument,
  SessionDetailDocument,
  TaskStatusSummariesDocument,
} from '../generated/graphql.ts'

describe('a pending request survives an agent relaunch after a server restart (sqlite)', () => {
  const servers: TestServer[] = []
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()))
  })

  it('the permission the relaunched agent raises during the user’s turn is the task’s pendingAction', async () => {
    const { first, token, taskId, sessionId } = await stoppedServerWithSession(servers, 'restart')

    const second = await startTestServer('sqlite', { databaseUrl: first.databaseUrl, env: { ADMIN_TOKEN: first.adminToken } })
    servers.push(second)
    const content = JSON.stringify({ script: [{ permission: { title: 'Run tests?' } }] })
    await ok(second.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
    const waiting = await eventually(async () => {
      const s = (await ok(second.graphqlUrl, token, SessionDetailDocument, { id: sessionId, last: 100 })).session!
      return s.messages.find((m) => m.kind === 'PERMISSION_REQUEST' && m.status === 'PENDING') && s
    })
    expect(waiting.state).toBe('RUNNING')
    // The relaunch's lifecycle turn is recorded before the user's turn, which stays the newest.
    expect(waiting.turns.map((t) => t.lifecycleOnly)).toEqual([true, false])
    await second.projector.idle()
    const [summary] = (await ok(second.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries
    expect(summary).toMatchObject({ pendingAction: 'PERMISSION', primarySession: { id: sessionId, state: 'RUNNING' } })
  })
})
