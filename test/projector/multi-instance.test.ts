import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RedisServer } from '../support/redis-server.ts'
import { startTwinServers, type TwinServers } from '../support/twin-servers.ts'
import type { TestServer } from '../support/server.ts'
import { eventually } from '../support/wait.ts'
import { ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  CreateUserDocument,
  SessionEventsDocument,
  StartSessionDocument,
  CreateWorkspaceDocument,
  ViewerDocument,
  WorkspaceEventsDocument,
} from '../generated/graphql.ts'

describe('two instances on one PostgreSQL and one Redis', () => {
  let twins: TwinServers | undefined
  let redis: RedisServer
  let a: TestServer
  let b: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    ;({ redis, a, b } = twins = await startTwinServers())
    token = (await ok(a.graphqlUrl, a.adminToken, CreateUserDocument, { name: 'u' })).createUser.token
    workspaceId = (await ok(a.graphqlUrl, token, CreateWorkspaceDocument, { name: 'shared' })).createWorkspace.id
  })
  afterAll(() => twins?.close())

  async function subscribedOnB(workspace = workspaceId) {
    const client = await wsClient(b.wsUrl, token)
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId: workspace })
    await wsExecute(client, ViewerDocument)
    // Redis SUBSCRIBE is asynchronous: wait until Redis counts instance B on the channel.
    await eventually(async () => (await redis.subscribers(`tss:workspace:${workspace}`)) >= 1, 10_000)
    return { client, feed }
  }

  it('a change through instance A reaches a workspaceEvents subscriber on instance B', async () => {
    const { client, feed } = await subscribedOnB()
    const task = (await ok(a.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'via A' } })).createTask
    const events = (await feed.waitFor(2)).map((e) => e.data?.workspaceEvents)
    expect(events).toContainEqual(expect.objectContaining({ __typename: 'TaskUpserted', task: expect.objectContaining({ id: task.id }) }))
    expect(events).toContainEqual(
      expect.objectContaining({ __typename: 'TaskStatusSummaryUpdated', taskId: task.id, summary: expect.objectContaining({ revision: 1 }) }),
    )
    feed.dispose()
    await client.dispose()
  })

  it('a subscriber on instance B follows a session whose agent runs on instance A', async () => {
    const taskId = (await ok(a.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'agent on A' } })).createTask.id
    const sessionId = (await ok(a.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const client = await wsClient(b.wsUrl, token)
    const events = wsSubscribe(client, SessionEventsDocument, { sessionId })
    await events.waitFor(1)
    await eventually(async () => (await redis.subscribers(`tss:session:${sessionId}`)) >= 1, 10_000)
    await ok(a.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: 'from A' } })
    for (let n = 2; ; n++) {
      const all = await events.waitFor(n)
      if (all.some((e) => e.data?.sessionEvents.__typename === 'TurnCompleted')) break
    }
    expect(JSON.stringify(events.events)).toContain('echo: from A')
    expect(b.sessions.runtime(sessionId)).toBeUndefined()
    events.dispose()
    await client.dispose()
  })

  // A subscriber that already holds a feed position is repaired from the database instead
  // (test/feed/resume.test.ts); one that has received nothing yet has no position to repair from.
  it('after the pub/sub connection drops, a subscriber with no feed position yet gets WorkspaceResync', async () => {
    // A workspace of its own: a late delta of an earlier test's task would give the feed a position.
    const quiet = (await ok(a.graphqlUrl, token, CreateWorkspaceDocument, { name: 'quiet' })).createWorkspace.id
    const { client, feed } = await subscribedOnB(quiet)
    expect(feed.events).toEqual([])
    await redis.killPubSubClients()
    const events = await feed.waitFor(1)
    expect(events[0]?.data?.workspaceEvents).toMatchObject({ __typename: 'WorkspaceResync', workspaceId: quiet })
    // And the feed works again afterwards.
    await eventually(async () => (await redis.subscribers(`tss:workspace:${quiet}`)) >= 1, 10_000)
    const task = (await ok(a.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId: quiet, title: 'after' } })).createTask
    for (let n = 2; ; n++) {
      const all = await feed.waitFor(n)
      if (all.some((e) => (e.data?.workspaceEvents as { task?: { id: string } } | undefined)?.task?.id === task.id)) break
    }
    feed.dispose()
    await client.dispose()
  })
})
