import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { CreateTaskDocument, CreateUserDocument, ViewerDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

describe('workspace feed cohorts (one execution per event for identical subscriptions)', () => {
  let server: TestServer
  let token: string
  let outsider: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    const owner = await userWithWorkspace(server, 'dev')
    token = owner.token
    workspaceId = owner.workspaceId
    outsider = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'out' })).createUser.token
  })
  afterAll(() => server?.close())

  it('delivers the same events to every member, authorizes each subscriber, and ends with its last member', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => wsClient(server.wsUrl, token)))
    const feeds = clients.map((c) => wsSubscribe(c, WorkspaceEventsDocument, { workspaceId }))
    const intruderClient = await wsClient(server.wsUrl, outsider)
    const intruder = wsSubscribe(intruderClient, WorkspaceEventsDocument, { workspaceId })
    expect((await intruder.waitFor(1))[0]?.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    for (const c of clients) await wsExecute(c, ViewerDocument)
    expect(server.gateway.cohorts.size).toBe(1)

    const task = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'shared' } })).createTask
    const received = await Promise.all(feeds.map((f) => f.waitFor(2)))
    for (const events of received)
      expect(events.slice(0, 2).map((e) => e.data?.workspaceEvents.__typename)).toEqual(['TaskUpserted', 'TaskStatusSummaryUpdated'])
    expect(new Set(received.map((events) => JSON.stringify(events.slice(0, 2))))).toHaveLength(1)
    expect(JSON.stringify(received[0])).toContain(task.id)

    // The first member leaving does not end the feed of the others.
    feeds[0]!.dispose()
    await wsExecute(clients[0]!, ViewerDocument)
    await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'second' } })
    await Promise.all(feeds.slice(1).map((f) => f.waitFor(4)))
    for (const f of feeds.slice(1)) f.dispose()
    await eventually(() => server.gateway.cohorts.size === 0)
    await Promise.all([...clients, intruderClient].map((c) => c.dispose()))
  })
})
