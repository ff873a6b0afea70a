import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { ok } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { gitRepo } from '../support/git-repo.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  DeleteSessionDocument,
  StartSessionDocument,
  StopSessionDocument,
  UpdateTaskDocument,
  WorkflowDocument,
} from '../generated/graphql.ts'

describe('Git monitor frees its per-session state when a session ends (real server, mock agent, sqlite)', () => {
  let server: TestServer
  let owner: { token: string; workspaceId: string }

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    owner = await userWithWorkspace(server, 'git')
  })
  afterAll(() => server?.close())

  const gql = <R, V>(doc: Parameters<typeof ok<R, V>>[2], vars: V) => ok<R, V>(server.graphqlUrl, owner.token, doc, ...([vars] as never))

  async function runningSession() {
    const repo = gitRepo()
    const { createTask } = await gql(CreateTaskDocument, {
      input: { workspaceId: owner.workspaceId, title: 'git', repositories: [{ name: 'acme/web', localPath: repo.dir, baseBranch: 'main' }] },
    })
    const { startSession } = await gql(StartSessionDocument, { input: { taskId: createTask.id } })
    return { taskId: createTask.id, sessionId: startSession.id }
  }

  /** A monitor pass once the session service no longer runs the session. */
  async function tickAfterEnd(sessionId: string) {
    await eventually(() => !server.sessions.liveSessionIds().includes(sessionId))
    await server.git.tick()
  }

  it('after stop, crash, delete and a move to a terminal step, the table is empty again', async () => {
    const stopped = await runningSession()
    const crashed = await runningSession()
    const deleted = await runningSession()
    const completed = await runningSession()
    await server.git.tick()
    expect(server.git.trackedSessions).toBe(4)

    await gql(StopSessionDocument, { id: stopped.sessionId })
    await tickAfterEnd(stopped.sessionId)
    expect(server.git.trackedSessions).toBe(3)

    const crash = JSON.stringify({ script: [{ crash: 3 }] })
    await gql(AddMessageDocument, { input: { taskId: crashed.taskId, sessionId: crashed.sessionId, clientMessageId: randomUUID(), content: crash } })
    await tickAfterEnd(crashed.sessionId)
    expect(server.git.trackedSessions).toBe(2)

    await gql(DeleteSessionDocument, { id: deleted.sessionId })
    await tickAfterEnd(deleted.sessionId)
    expect(server.git.trackedSessions).toBe(1)

    const done = (await gql(WorkflowDocument, { workspaceId: owner.workspaceId })).workflow.steps.find((s) => s.terminal)!
    await gql(UpdateTaskDocument, { id: completed.taskId, input: { workflowStepId: done.id } })
    await tickAfterEnd(completed.sessionId)
    expect(server.git.trackedSessions).toBe(0)
  })
})
