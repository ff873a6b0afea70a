import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { eventually } from '../support/wait.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createSession } from '../../src/store/sessions.ts'
import type { PubSub } from '../../src/pubsub/pubsub.ts'
import { CreateUserDocument, SessionEventsDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

const EMPTY = { subscriptions: 0, detached: 0, memberships: 0, schedulerSessions: 0, cohorts: 0 }

describe('the delivery gateway frees what each subscription and connection held (sqlite)', () => {
  let server: TestServer
  let token: string
  let outsider: string
  let workspaceId: string
  let sessionId: string
  let restorePubSub: (() => void) | undefined
  /** Closes what a test left open, so one failing test does not skew the next one's tables. */
  const cleanups: (() => unknown)[] = []
  const connect = async (as: string) => {
    const client = await wsClient(server.wsUrl, as)
    cleanups.push(() => client.dispose())
    return client
  }

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'dev'))
    outsider = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'out' })).createUser.token
    const task = await createTask(server.store, { workspaceId, title: 'watched' })
    sessionId = (await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'WAITING_FOR_INPUT' })).id
  })
  afterEach(async () => {
    restorePubSub?.()
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()))
    await eventually(() => server.gateway.tableSizes().connections === 0)
  })
  afterAll(() => server?.close())

  type Sizes = ReturnType<TestServer['gateway']['tableSizes']>
  /** Waits for the tables to reach `expected` (frees happen as graphql-ws finishes each operation), then asserts them. */
  async function tablesAre(expected: Partial<Sizes>) {
    const reached = () => Object.entries(expected).every(([table, size]) => server.gateway.tableSizes()[table as keyof Sizes] === size)
    await eventually(reached, 5_000).catch(() => undefined)
    expect(server.gateway.tableSizes()).toMatchObject(expected)
  }

  /** The next subscription to `topic` fails on its first read, as a lost Redis connection would. */
  function failNextSubscription(topic: 'session' | 'workspace') {
    const pubsub: PubSub = server.pubsub
    const original = pubsub.subscribe
    pubsub.subscribe = ((t, key, options) => {
      const live = original.call(pubsub, t, key, options)
      if (t !== topic) return live
      pubsub.subscribe = original
      const failing: typeof live = {
        next: () => Promise.reject(new Error('injected: pub/sub connection lost')),
        return: async () => {
          await live.return?.()
          return { value: undefined, done: true }
        },
        [Symbol.asyncIterator]: () => failing,
      }
      return failing
    }) as PubSub['subscribe']
    restorePubSub = () => (pubsub.subscribe = original)
  }

  it('after the client completes its subscriptions', async () => {
    const client = await connect(token)
    const events = wsSubscribe(client, SessionEventsDocument, { sessionId })
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    await events.waitFor(1)
    await eventually(() => server.gateway.tableSizes().detached === 1)
    // The feed runs in the gateway (detached from graphql-ws); the session stream does not.
    expect(server.gateway.tableSizes()).toMatchObject({ connections: 1, subscriptions: 2, detached: 1, memberships: 1, cohorts: 1 })
    events.dispose()
    feed.dispose()
    await tablesAre({ connections: 1, ...EMPTY })
    await client.dispose()
    await tablesAre({ connections: 0 })
  })

  it('after the server completes a subscription', async () => {
    const client = await connect(outsider)
    const denied = wsSubscribe(client, SessionEventsDocument, { sessionId })
    expect((await denied.waitFor(1))[0]?.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    await eventually(() => denied.completed)
    await tablesAre({ connections: 1, ...EMPTY })
  })

  it('after a subscription fails on the server (session stream and shared feed)', async () => {
    const client = await connect(token)
    failNextSubscription('session')
    const events = wsSubscribe(client, SessionEventsDocument, { sessionId })
    await eventually(() => events.failure)
    failNextSubscription('workspace')
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    await eventually(() => feed.failure)
    await tablesAre({ connections: 1, ...EMPTY })
  })

  it('after the socket closes with subscriptions open', async () => {
    const client = await connect(token)
    const events = wsSubscribe(client, SessionEventsDocument, { sessionId })
    wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    await events.waitFor(1)
    await client.dispose()
    await tablesAre({ connections: 0, cohorts: 0 })
  })

  it('after the socket is terminated abruptly with subscriptions open', async () => {
    const client = await rawGraphqlWs(server.wsUrl, token)
    cleanups.push(() => client.socket.terminate())
    client.subscribe('events', SessionEventsDocument, { sessionId })
    client.subscribe('feed', WorkspaceEventsDocument, { workspaceId })
    await client.waitFor((f) => f.id === 'events')
    await eventually(() => server.gateway.tableSizes().cohorts === 1)
    client.socket.terminate()
    await tablesAre({ connections: 0, cohorts: 0 })
  })
})
