import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { CreateTaskDocument, TaskStatusSummaryUpdatedDocument, ViewerDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

const CONTRACT_CODES = ['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'BAD_USER_INPUT', 'CONFLICT', 'RATE_LIMITED', 'INTERNAL_SERVER_ERROR', 'UNAVAILABLE']

type Samples = Map<string, number>

/** Scrapes /metrics of the listening server: series text (name{labels}) → value. */
async function scrape(server: TestServer): Promise<Samples> {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const samples: Samples = new Map()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    samples.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return samples
}

const series = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`

const value = (samples: Samples, name: string, labels: Record<string, string>) => samples.get(series(name, labels)) ?? 0
const errors = (samples: Samples, code: string) => value(samples, 'graphql_errors_total', { code })
const active = (samples: Samples, transport: string, field: string) => value(samples, 'graphql_subscriptions_active', { transport, field })

async function activeBecomes(server: TestServer, transport: string, field: string, expected: number) {
  return eventually(async () => active(await scrape(server), transport, field) === expected)
}

describe('GraphQL metrics have no holes and bounded labels (sqlite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'metrics'))
  })
  afterAll(() => server?.close())

  const post = (body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    fetch(server.graphqlUrl, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers }, body }).then((r) => r.text())

  it('counts every error once by its code: parse, validation, variables, request and media-type errors, on both transports', async () => {
    const before = await scrape(server)
    await post(JSON.stringify({ query: '{ viewer ' })) // parse
    await post(JSON.stringify({ query: '{ nope }' })) // validation
    await post(JSON.stringify({ query: 'query ($id: ID!) { task(id: $id) { id } }', variables: { id: {} } })) // variables
    await post('{"query": ') // malformed JSON
    await post('{ viewer { user { id } } }', { 'content-type': 'text/plain' }) // 415
    await fetch(server.graphqlUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ viewer { user { id } } }' }) }) // no token
    const ws = await rawGraphqlWs(server.wsUrl, token)
    ws.send({ id: 'p', type: 'subscribe', payload: { query: '{ viewer ' } })
    ws.send({ id: 'v', type: 'subscribe', payload: { query: '{ nope }' } })
    ws.send({ id: 'x', type: 'subscribe', payload: { query: 'query ($id: ID!) { task(id: $id) { id } }', variables: { id: {} } } })
    for (const id of ['p', 'v', 'x']) await ws.waitFor((f) => f.id === id && (f.type === 'error' || f.type === 'next'))
    ws.socket.close()

    const after = await scrape(server)
    expect(errors(after, 'BAD_USER_INPUT') - errors(before, 'BAD_USER_INPUT')).toBe(8)
    expect(errors(after, 'UNAUTHENTICATED') - errors(before, 'UNAUTHENTICATED')).toBe(1)
    const codes = [...after.keys()].filter((k) => k.startsWith('graphql_errors_total{')).map((k) => /code="([^"]+)"/.exec(k)![1])
    for (const code of codes) expect(CONTRACT_CODES).toContain(code)
  })

  it('times queries and mutations on both transports', async () => {
    const count = (s: Samples, transport: string, operation: string) =>
      value(s, 'graphql_request_duration_seconds_count', { transport, operation })
    const before = await scrape(server)
    await ok(server.graphqlUrl, token, ViewerDocument)
    const client = await wsClient(server.wsUrl, token)
    await wsExecute(client, ViewerDocument)
    await wsExecute(client, CreateTaskDocument, { input: { workspaceId, title: 'timed' } })
    await client.dispose()
    const after = await scrape(server)
    expect(count(after, 'http', 'query') - count(before, 'http', 'query')).toBe(1)
    expect(count(after, 'ws', 'query') - count(before, 'ws', 'query')).toBe(1)
    expect(count(after, 'ws', 'mutation') - count(before, 'ws', 'mutation')).toBe(1)
  })

  it('a WebSocket subscription is counted, active while it streams and timed once the client completes it', async () => {
    const before = await scrape(server)
    const client = await wsClient(server.wsUrl, token)
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    const feeds = active(before, 'ws', 'workspaceEvents')
    await activeBecomes(server, 'ws', 'workspaceEvents', feeds + 1)
    const streaming = await scrape(server)
    expect(value(streaming, 'graphql_subscriptions_started_total', { transport: 'ws', field: 'workspaceEvents' }) - value(before, 'graphql_subscriptions_started_total', { transport: 'ws', field: 'workspaceEvents' })).toBe(1)
    feed.dispose()
    await activeBecomes(server, 'ws', 'workspaceEvents', feeds)
    const ended = await scrape(server)
    const durations = (s: Samples) => value(s, 'graphql_subscription_duration_seconds_count', { transport: 'ws', field: 'workspaceEvents' })
    expect(durations(ended) - durations(before)).toBe(1)
    await client.dispose()
  })

  it('every subscription of a socket that closes abruptly stops being active', async () => {
    const before = await scrape(server)
    const feeds = active(before, 'ws', 'workspaceEvents')
    const summaries = active(before, 'ws', 'taskStatusSummaryUpdated')
    const ws = await rawGraphqlWs(server.wsUrl, token)
    ws.subscribe('a', WorkspaceEventsDocument, { workspaceId })
    ws.subscribe('b', TaskStatusSummaryUpdatedDocument, { workspaceId })
    await activeBecomes(server, 'ws', 'workspaceEvents', feeds + 1)
    await activeBecomes(server, 'ws', 'taskStatusSummaryUpdated', summaries + 1)
    ws.socket.terminate()
    await activeBecomes(server, 'ws', 'workspaceEvents', feeds)
    await activeBecomes(server, 'ws', 'taskStatusSummaryUpdated', summaries)
  })

  it('a subscription whose stream fails on the server stops being active and its error is counted', async () => {
    const before = await scrape(server)
    const client = await wsClient(server.wsUrl, token)
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    const feeds = active(before, 'ws', 'workspaceEvents')
    await activeBecomes(server, 'ws', 'workspaceEvents', feeds + 1)
    // A payload no publisher of this server writes: the feed's loader throws and the stream ends in error.
    await server.pubsub.publish('workspace', workspaceId, { type: 'TaskUpserted', workspaceId, taskId: undefined as unknown as string, sequence: 0 })
    await feed.waitFor(1)
    expect(feed.failure).toBeDefined()
    await activeBecomes(server, 'ws', 'workspaceEvents', feeds)
    expect(errors(await scrape(server), 'INTERNAL_SERVER_ERROR') - errors(before, 'INTERNAL_SERVER_ERROR')).toBe(1)
    await client.dispose()
  })

  it('a refused subscription start is an error, not a started subscription', async () => {
    const outsider = await userWithWorkspace(server, 'outsider')
    const before = await scrape(server)
    const client = await wsClient(server.wsUrl, outsider.token)
    const denied = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    await denied.waitFor(1)
    expect(denied.events[0]?.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    await client.dispose()
    const after = await scrape(server)
    expect(errors(after, 'FORBIDDEN') - errors(before, 'FORBIDDEN')).toBe(1)
    const started = (s: Samples) => value(s, 'graphql_subscriptions_started_total', { transport: 'ws', field: 'workspaceEvents' })
    expect(started(after)).toBe(started(before))
  })

  it('a subscription over an HTTP event stream is active until the client goes away', async () => {
    const abort = new AbortController()
    const response = await fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: 'subscription ($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }', variables: { w: workspaceId } }),
      signal: abort.signal,
    })
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/)
    await activeBecomes(server, 'http', 'workspaceEvents', 1)
    abort.abort()
    await response.body?.cancel().catch(() => undefined)
    await activeBecomes(server, 'http', 'workspaceEvents', 0)
  })

  it('keeps every label bounded: no ids, only fixed label names and values from fixed sets', async () => {
    const samples = await scrape(server)
    const fields = new Set(['workspaceEvents', 'taskStatusSummaryUpdated', 'sessionEvents', 'unknown'])
    for (const key of samples.keys()) {
      // Ids of sessions, tasks, workspaces, users or connections (UUIDs, cuids) never appear as a label value.
      expect(key).not.toMatch(/="[0-9a-f]{8}-[0-9a-f]{4}-|="c[a-z0-9]{20,}"/)
      expect(key).not.toMatch(/\b(session|sessionId|task|taskId|workspace|workspaceId|user|userId|client|connection)="/)
      if (key.startsWith('graphql_')) {
        const field = /field="([^"]+)"/.exec(key)?.[1]
        if (field) expect(fields).toContain(field)
        const transport = /transport="([^"]+)"/.exec(key)?.[1]
        if (transport) expect(['http', 'ws']).toContain(transport)
        const operation = /operation="([^"]+)"/.exec(key)?.[1]
        if (operation) expect(['query', 'mutation', 'subscription', 'unknown']).toContain(operation)
      }
    }
  })
})
