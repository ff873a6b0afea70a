import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CloseEvent } from 'ws'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import {
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  DeleteTaskDocument,
  UpdateTaskDocument,
  ViewerDocument,
  WorkspaceEventsDocument,
  TaskStatusSummaryUpdatedDocument,
} from '../generated/graphql.ts'

describe.each(PROVIDERS)('graphql-ws on /graphql (%s)', (provider) => {
  let server: TestServer
  let alice: string
  let bob: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer(provider)
    alice = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'Alice' })).createUser.token
    bob = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'Bob' })).createUser.token
    workspaceId = (await ok(server.graphqlUrl, alice, CreateWorkspaceDocument, { name: 'W' })).createWorkspace.id
  })
  afterAll(() => server?.close())

  it('authenticates with the connection_init payload and answers queries over the socket', async () => {
    const client = await wsClient(server.wsUrl, alice)
    const result = await wsExecute(client, ViewerDocument)
    expect(result.data?.viewer.user.name).toBe('Alice')
    await client.dispose()
  })

  it('closes a connection without a valid token with 4403', async () => {
    await expect(wsClient(server.wsUrl, undefined)).rejects.toMatchObject({ code: 4403 } satisfies Partial<CloseEvent>)
    await expect(wsClient(server.wsUrl, 'tss_wrong')).rejects.toMatchObject({ code: 4403 })
  })

  it('streams TaskUpserted and TaskDeleted to workspace members only', async () => {
    const member = await wsClient(server.wsUrl, alice)
    const outsider = await wsClient(server.wsUrl, bob)
    const feed = wsSubscribe(member, WorkspaceEventsDocument, { workspaceId })
    const denied = wsSubscribe(outsider, WorkspaceEventsDocument, { workspaceId })
    await denied.waitFor(1)
    expect(denied.events[0]?.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')

    // The subscription is registered once the server has acknowledged an operation sent after it.
    await wsExecute(member, ViewerDocument)
    const task = (await ok(server.graphqlUrl, alice, CreateTaskDocument, { input: { workspaceId, title: 'live' } }))
      .createTask
    await ok(server.graphqlUrl, alice, UpdateTaskDocument, { id: task.id, input: { title: 'live 2' } })
    await ok(server.graphqlUrl, alice, DeleteTaskDocument, { id: task.id })
    // Summary replacements share the feed; here only the task events are looked at.
    const taskEvents = async (n: number) => {
      for (let seen = 1; ; seen++) {
        const events = (await feed.waitFor(seen)).map((e) => e.data?.workspaceEvents)
        const picked = events.filter((e) => e?.__typename === 'TaskUpserted' || e?.__typename === 'TaskDeleted')
        if (picked.length >= n || feed.completed) return picked
      }
    }
    expect(await taskEvents(3)).toEqual([
      { __typename: 'TaskUpserted', task: { id: task.id, title: 'live', workflowStepId: task.workflowStepId } },
      { __typename: 'TaskUpserted', task: { id: task.id, title: 'live 2', workflowStepId: task.workflowStepId } },
      { __typename: 'TaskDeleted', taskId: task.id, workspaceId },
    ])
    feed.dispose()
    await member.dispose()
    await outsider.dispose()
  })

  it('does not deliver another workspace’s events', async () => {
    const otherWorkspace = (await ok(server.graphqlUrl, bob, CreateWorkspaceDocument, { name: 'Other' }))
      .createWorkspace.id
    const client = await wsClient(server.wsUrl, alice)
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    await wsExecute(client, ViewerDocument)
    await ok(server.graphqlUrl, bob, CreateTaskDocument, { input: { workspaceId: otherWorkspace, title: 'secret' } })
    const mine = (await ok(server.graphqlUrl, alice, CreateTaskDocument, { input: { workspaceId, title: 'mine' } }))
      .createTask
    const [first] = await feed.waitFor(1)
    // The first event to arrive concerns the member's own task: the other workspace's task never came.
    expect(first?.data?.workspaceEvents).toMatchObject({ __typename: 'TaskUpserted', task: { id: mine.id } })
    const later = await feed.waitFor(2)
    expect(later[1]?.data?.workspaceEvents).toMatchObject({ __typename: 'TaskStatusSummaryUpdated', taskId: mine.id })
    feed.dispose()
    await client.dispose()
  })

  it('taskStatusSummaryUpdated carries only whole summary replacements, for members only', async () => {
    const member = await wsClient(server.wsUrl, alice)
    const outsider = await wsClient(server.wsUrl, bob)
    const summaries = wsSubscribe(member, TaskStatusSummaryUpdatedDocument, { workspaceId })
    const denied = wsSubscribe(outsider, TaskStatusSummaryUpdatedDocument, { workspaceId })
    expect((await denied.waitFor(1))[0]?.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    await wsExecute(member, ViewerDocument)
    const task = (await ok(server.graphqlUrl, alice, CreateTaskDocument, { input: { workspaceId, title: 's' } })).createTask
    const [first] = await summaries.waitFor(1)
    expect(first?.data?.taskStatusSummaryUpdated).toMatchObject({
      taskId: task.id,
      workspaceId,
      summary: { taskId: task.id, revision: 1, pendingAction: null, activeError: null, git: null, pullRequest: null },
    })
    expect(first?.data?.taskStatusSummaryUpdated.summary.lastActivityAt).toBe(task.createdAt)
    summaries.dispose()
    await member.dispose()
    await outsider.dispose()
  })

  it('reports a syntax error as the operation’s error without closing the socket', async () => {
    const client = await wsClient(server.wsUrl, alice)
    const result = await new Promise<unknown>((resolve) => {
      client.subscribe({ query: '{ viewer { ' }, { next: resolve, error: resolve, complete: () => undefined })
    })
    expect(result).toEqual([expect.objectContaining({ extensions: { code: 'BAD_USER_INPUT' } })])
    expect((await wsExecute(client, ViewerDocument)).data?.viewer.user.name).toBe('Alice')
    await client.dispose()
  })
})
