import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { startTwinServers, type TwinServers } from '../support/twin-servers.ts'
import { ok, wsClient, wsExecute, wsSubscribe, type GraphQLErrorShape } from '../support/client.ts'
import { createUserWithToken } from '../../src/store/users.ts'
import { CreateTaskDocument, CreateWorkspaceDocument, ViewerDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

type Body = { data?: unknown; errors?: GraphQLErrorShape[] }

const WINDOW_MS = 60_000
const limitedEnv = { RATE_LIMIT_MUTATIONS: '3', RATE_LIMIT_SUBSCRIPTIONS: '2', RATE_LIMIT_WINDOW_SECONDS: '60' }

async function post(url: string, token: string, query: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  })
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Body }
}

const createWorkspace = (name: string) => `mutation { createWorkspace(name: "${name}") { id } }`

describe('per-caller rate limits (in memory)', () => {
  let server: TestServer
  const workspacesNamed = (name: string) => server.store.db.workspace.count({ where: { name } })
  /** A fresh caller, made in the store so that no one's budget is spent on it. */
  const caller = async () => (await createUserWithToken(server.store.db, `u-${randomUUID()}`)).token

  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: limitedEnv })
    // rate-limiter-flexible's memory store reads Date.now(): the window moves only when the test says so.
    vi.useFakeTimers({ toFake: ['Date'] })
  })
  afterAll(async () => {
    vi.useRealTimers()
    await server?.close()
  })

  it('refuses the 4th mutation in the window with RATE_LIMITED, a retry hint and 429, and stores nothing', async () => {
    const token = await caller()
    for (let i = 0; i < 3; i++) expect((await post(server.graphqlUrl, token, createWorkspace(`ok-${i}`))).body.errors).toBeUndefined()
    const marker = `refused-${randomUUID()}`
    const refused = await post(server.graphqlUrl, token, createWorkspace(marker))
    expect(refused.status).toBe(429)
    expect(refused.retryAfter).toBe('60')
    expect(refused.body.data ?? undefined).toBeUndefined()
    const [error] = refused.body.errors!
    expect(error!.extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: WINDOW_MS })
    expect(error!.message).toBe('Rate limit of 3 mutations per 60 s reached; retry in 60000 ms.')
    expect(await workspacesNamed(marker)).toBe(0)

    // Reads are not limited, and the hint shrinks as the window runs out.
    expect((await post(server.graphqlUrl, token, '{ viewer { user { id } } }')).body.errors).toBeUndefined()
    vi.advanceTimersByTime(45_000)
    const later = await post(server.graphqlUrl, token, createWorkspace(marker))
    expect(later.body.errors![0]!.extensions).toEqual({ code: 'RATE_LIMITED', retryAfterMs: 15_000 })
    expect(later.retryAfter).toBe('15')
    expect(await workspacesNamed(marker)).toBe(0)

    vi.advanceTimersByTime(15_000)
    expect((await post(server.graphqlUrl, token, createWorkspace(marker))).body.errors).toBeUndefined()
    expect(await workspacesNamed(marker)).toBe(1)
  })

  it('keeps one budget per caller', async () => {
    const spent = await caller()
    for (let i = 0; i < 4; i++) await post(server.graphqlUrl, spent, createWorkspace('spent'))
    expect((await post(server.graphqlUrl, spent, createWorkspace('spent'))).status).toBe(429)
    const other = await caller()
    expect((await post(server.graphqlUrl, other, createWorkspace('other'))).body.errors).toBeUndefined()
  })

  it('counts every root mutation field: two aliased mutations with one point left are refused whole', async () => {
    const token = await caller()
    for (let i = 0; i < 2; i++) await post(server.graphqlUrl, token, createWorkspace('first two'))
    const marker = `pair-${randomUUID()}`
    const pair = await post(
      server.graphqlUrl,
      token,
      `mutation { a: createWorkspace(name: "${marker}") { id } b: createWorkspace(name: "${marker}") { id } }`,
    )
    expect(pair.body.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMITED'])
    expect(await workspacesNamed(marker)).toBe(0)
  })

  describe('over graphql-ws', () => {
    afterEach(() => vi.advanceTimersByTime(WINDOW_MS))

    it('refuses a mutation over the budget with RATE_LIMITED and retryAfterMs (no HTTP details), and stores nothing', async () => {
      const token = await caller()
      const client = await wsClient(server.wsUrl, token)
      try {
        for (let i = 0; i < 3; i++) expect((await wsExecute(client, CreateWorkspaceDocument, { name: `ws-${i}` })).errors).toBeUndefined()
        const marker = `ws-refused-${randomUUID()}`
        const refused = await wsExecute(client, CreateWorkspaceDocument, { name: marker })
        expect(refused.errors?.map((e) => e.extensions)).toEqual([{ code: 'RATE_LIMITED', retryAfterMs: WINDOW_MS }])
        expect(await workspacesNamed(marker)).toBe(0)
        expect((await wsExecute(client, ViewerDocument)).errors).toBeUndefined()
      } finally {
        await client.dispose()
      }
    })

    it('refuses the 3rd subscription start in the window, keeps the connection and the started ones', async () => {
      const token = await caller()
      const workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: 'feeds' })).createWorkspace.id
      const client = await wsClient(server.wsUrl, token)
      try {
        const started = [wsSubscribe(client, WorkspaceEventsDocument, { workspaceId }), wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })]
        const third = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
        const [refusal, ...rest] = await third.waitFor(2) // returns at the complete that follows the refusal
        expect(refusal?.errors?.map((e) => e.extensions)).toEqual([{ code: 'RATE_LIMITED', retryAfterMs: WINDOW_MS }])
        expect(rest).toEqual([])
        expect(third.completed).toBe(true)

        // The connection and the two started subscriptions keep working.
        await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'seen by both' } })
        for (const feed of started) expect((await feed.waitFor(1))[0]?.errors).toBeUndefined()

        vi.advanceTimersByTime(WINDOW_MS)
        const afterWindow = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
        await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'seen after the window' } })
        expect((await afterWindow.waitFor(1))[0]?.errors).toBeUndefined()
        for (const feed of [...started, afterWindow]) feed.dispose()
      } finally {
        await client.dispose()
      }
    })
  })
})

describe('rate limits shared through Redis by two instances', () => {
  let twins: TwinServers | undefined
  let a: TestServer
  let b: TestServer

  beforeAll(async () => {
    ;({ a, b } = twins = await startTwinServers(limitedEnv))
  })
  afterAll(() => twins?.close())

  it('spends one budget whichever instance a mutation reaches', async () => {
    const { token } = await createUserWithToken(a.store.db, 'shared')
    expect((await post(a.graphqlUrl, token, createWorkspace('a1'))).body.errors).toBeUndefined()
    expect((await post(b.graphqlUrl, token, createWorkspace('b1'))).body.errors).toBeUndefined()
    expect((await post(a.graphqlUrl, token, createWorkspace('a2'))).body.errors).toBeUndefined()
    const marker = `shared-${randomUUID()}`
    for (const instance of [b, a]) {
      const refused = await post(instance.graphqlUrl, token, createWorkspace(marker))
      expect(refused.status).toBe(429)
      expect(refused.body.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMITED'])
      expect(Number(refused.body.errors![0]!.extensions!.retryAfterMs)).toBeGreaterThan(0)
      expect(Number(refused.body.errors![0]!.extensions!.retryAfterMs)).toBeLessThanOrEqual(WINDOW_MS)
    }
    expect(await a.store.db.workspace.count({ where: { name: marker } })).toBe(0)
  })

  it('counts subscription starts across instances too', async () => {
    const { token } = await createUserWithToken(a.store.db, 'subscriber')
    const query = 'subscription { workspaceEvents(workspaceId: "none") { __typename } }'
    const outcomes: Body[] = []
    for (const instance of [a, b, b]) {
      const client = await wsClient(instance.wsUrl, token)
      const iterator = client.iterate({ query })
      outcomes.push((await iterator.next()).value as Body)
      await iterator.return?.()
      await client.dispose()
    }
    // The first two start (and fail on their own: no such workspace); the third is refused before it starts.
    expect(outcomes.map((o) => o.errors?.[0]?.extensions?.code)).toEqual(['NOT_FOUND', 'NOT_FOUND', 'RATE_LIMITED'])
  })
})
