import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute, wsSubscribe, type GraphQLErrorShape } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { CreateTaskDocument, ViewerDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

describe('subscriptions per connection (MAX_SUBSCRIPTIONS_PER_CONNECTION)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: { MAX_SUBSCRIPTIONS_PER_CONNECTION: '3' } })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'cap'))
  })
  afterAll(() => server?.close())

  const activeSubscriptions = () => server.gateway.tableSizes().subscriptions

  it('refuses the subscription over the cap with BAD_USER_INPUT, keeps the connection, and frees a slot on complete', async () => {
    const client = await wsClient(server.wsUrl, token)
    const other = await wsClient(server.wsUrl, token)
    try {
      const feeds = [1, 2, 3].map(() => wsSubscribe(client, WorkspaceEventsDocument, { workspaceId }))
      await eventually(() => activeSubscriptions() === 3)

      const over = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
      await over.waitFor(1)
      expect((over.failure as GraphQLErrorShape[]).map((e) => e.extensions)).toEqual([
        { code: 'BAD_USER_INPUT', limit: 'maxSubscriptionsPerConnection' },
      ])
      expect((over.failure as GraphQLErrorShape[])[0]!.message).toBe('At most 3 subscriptions per connection; complete one first.')
      expect(activeSubscriptions()).toBe(3)

      // The connection stays open for queries and keeps serving its subscriptions; another connection has its own cap.
      expect((await wsExecute(client, ViewerDocument)).errors).toBeUndefined()
      const elsewhere = wsSubscribe(other, WorkspaceEventsDocument, { workspaceId })
      await eventually(() => activeSubscriptions() === 4)

      feeds.pop()!.dispose()
      await eventually(() => activeSubscriptions() === 3)
      const inFreedSlot = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
      await eventually(() => activeSubscriptions() === 4)

      await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'after the cap' } })
      for (const feed of [...feeds, elsewhere, inFreedSlot]) {
        const [event] = await feed.waitFor(1)
        expect(event?.errors).toBeUndefined()
        expect(feed.failure).toBeUndefined()
      }
    } finally {
      await Promise.all([client.dispose(), other.dispose()])
    }
  })
})
