// Feed cursors: what encodes round-trips, anything else is the client's error (BAD_USER_INPUT on
// `after`), also over a real server, where a refused resume leaves nothing subscribed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GraphQLError } from 'graphql'
import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { decodeFeedCursor, encodeFeedCursor, type FeedPosition } from '../../src/feed/cursor.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { scrapeMetric } from '../support/metrics.ts'
import type { PubSub } from '../../src/pubsub/pubsub.ts'
import {
  BootFeedCursorDocument,
  ResumeTaskStatusSummaryUpdatedDocument,
  ResumeWorkspaceEventsDocument,
  UpdateTaskDocument,
  CreateTaskDocument,
} from '../generated/graphql.ts'

const encoded = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

describe('feed cursor encoding', () => {
  it.each<[string, FeedPosition]>([
    ['position 0', { epoch: 'e', workspaceId: 'w', sequence: 0 }],
    ['a uuid epoch and workspace', { epoch: '3f1b2c9e-8a4d-4c2e-9f7a-1b2c3d4e5f60', workspaceId: 'a1b2c3d4-0000-4000-8000-000000000001', sequence: 42 }],
    ['the largest safe sequence', { epoch: 'e', workspaceId: 'w', sequence: Number.MAX_SAFE_INTEGER }],
    ['non-ASCII ids', { epoch: 'é', workspaceId: 'ワークスペース', sequence: 7 }],
  ])('round-trips %s', (_name, position) => {
    const cursor = encodeFeedCursor(position)
    // Safe in a URL or a JSON string without escaping.
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(decodeFeedCursor(cursor)).toEqual(position)
  })

  it.each<[string, string]>([
    ['the empty string', ''],
    ['not base64 of JSON', 'abc'],
    ['plain text', 'garbage'],
    ['base64 of text that is not JSON', Buffer.from('[1, "e", "w", 1').toString('base64url')],
    ['an object', encoded({ version: 1, epoch: 'e', workspaceId: 'w', sequence: 1 })],
    ['null', encoded(null)],
    ['a number', encoded(5)],
    ['a string', encoded('cursor')],
    ['too few elements', encoded([1, 'e', 'w'])],
    ['too many elements', encoded([1, 'e', 'w', 1, 2])],
    ['another version', encoded([2, 'e', 'w', 1])],
    ['version as a string', encoded(['1', 'e', 'w', 1])],
    ['an epoch that is not a string', encoded([1, 5, 'w', 1])],
    ['a workspace that is not a string', encoded([1, 'e', null, 1])],
    ['a negative sequence', encoded([1, 'e', 'w', -1])],
    ['a non-integer sequence', encoded([1, 'e', 'w', 1.5])],
    ['a sequence as a string', encoded([1, 'e', 'w', '1'])],
    ['an unsafe integer sequence', encoded([1, 'e', 'w', 2 ** 53])],
    ['a missing sequence', encoded([1, 'e', 'w', null])],
  ])('refuses %s with BAD_USER_INPUT on after', (_name, value) => {
    let thrown: unknown
    try {
      decodeFeedCursor(value)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(GraphQLError)
    expect((thrown as GraphQLError).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'after' })
    // The message never echoes what was sent.
    if (value.length > 0) expect((thrown as GraphQLError).message).not.toContain(value)
  })
})

describe('malformed resume cursors over graphql-ws (sqlite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  /** Live pub/sub subscriptions on the workspace topic that have not been returned. */
  let openFeeds = 0

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'resumer'))
    // The feed services hold this same object, so every live subscription a feed opens passes here.
    const subscribe = server.pubsub.subscribe.bind(server.pubsub)
    server.pubsub.subscribe = ((topic, key, options) => {
      const inner = subscribe(topic, key, options)
      if (topic !== 'workspace') return inner
      openFeeds++
      let returned = false
      const release = () => {
        if (!returned) openFeeds--
        returned = true
      }
      const outer: AsyncIterableIterator<unknown> = {
        next: () => inner.next(),
        return: (value?: unknown) => {
          release()
          return inner.return ? inner.return(value as never) : Promise.resolve({ done: true, value: undefined })
        },
        throw: (error?: unknown) => {
          release()
          return inner.throw ? inner.throw(error) : Promise.reject(error)
        },
        [Symbol.asyncIterator]: () => outer,
      }
      return outer
    }) as PubSub['subscribe']
  })
  afterAll(() => server?.close())

  const active = (field: string) => scrapeMetric(server.url, 'graphql_subscriptions_active', { transport: 'ws', field })

  type ResumeDocument = TypedDocumentNode<unknown, { workspaceId: string; after?: string | null }>
  it.each<[string, ResumeDocument]>([
    ['workspaceEvents', ResumeWorkspaceEventsDocument as ResumeDocument],
    ['taskStatusSummaryUpdated', ResumeTaskStatusSummaryUpdatedDocument as ResumeDocument],
  ])('%s(after: "garbage") is BAD_USER_INPUT and leaves nothing subscribed', async (field, document) => {
    const client = await wsClient(server.wsUrl, token)
    const activeBefore = await active(field)
    const refused = wsSubscribe(client, document, { workspaceId, after: 'garbage' })
    await refused.waitFor(1)
    // The operation's own result (then complete), not a socket error: the connection carries on.
    const errors = refused.events[0]?.errors
    expect(errors).toEqual([expect.objectContaining({ path: [field], extensions: { code: 'BAD_USER_INPUT', field: 'after' } })])
    // The message names the argument, never the value sent.
    expect(JSON.stringify(errors)).not.toContain('garbage')
    await eventually(() => refused.completed)
    expect(refused.failure).toBeUndefined()
    expect(refused.events).toHaveLength(1)

    await eventually(() => server.gateway.tableSizes().subscriptions === 0)
    expect(server.gateway.tableSizes().cohorts).toBe(0)
    expect(openFeeds).toBe(0)
    expect(await active(field)).toBe(activeBefore)

    // The connection stays usable: a valid resume on it follows the feed.
    const { boot } = await ok(server.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })
    const feed = wsSubscribe(client, document, { workspaceId, after: boot.feedCursor })
    const task = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: field } })).createTask
    await ok(server.graphqlUrl, token, UpdateTaskDocument, { id: task.id, input: { title: `${field} edited` } })
    await feed.waitFor(1)
    expect(feed.events[0]?.errors).toBeUndefined()
    expect(server.gateway.tableSizes().subscriptions).toBe(1)
    // The probe above sees live feeds: this one holds exactly one.
    expect(openFeeds).toBe(1)
    feed.dispose()
    await eventually(() => server.gateway.tableSizes().subscriptions === 0 && openFeeds === 0)
    await client.dispose()
  })
})
