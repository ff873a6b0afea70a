import { randomUUID } from 'node:crypto'
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, type GraphQLErrorShape } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { OPERATION_LIMITS } from '../../src/contract/operation-limits.ts'
import {
  BootWithSummariesDocument,
  CachedBootDocument,
  CreateTaskDocument,
  SessionDetailDocument,
  SessionEventsDocument,
  StartSessionDocument,
  TasksWithSummariesDocument,
  WorkspaceEventsDocument,
} from '../generated/graphql.ts'

type Outcome = { status?: number; errors?: GraphQLErrorShape[]; data?: unknown }

describe('operation limits (README "Limits"), over HTTP and graphql-ws', () => {
  let server: TestServer
  let token: string
  let workspaceId: string
  let socket: Client

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'limits'))
    socket = await wsClient(server.wsUrl, token)
  })
  afterAll(async () => {
    await socket?.dispose()
    await server?.close()
  })

  const overHttp = async (query: string, variables?: Record<string, unknown>): Promise<Outcome> => {
    const response = await fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    })
    return { status: response.status, ...((await response.json()) as Outcome) }
  }

  /** The first result of one operation; an operation refused before it started arrives as an `error` message. */
  const overWs = async (query: string, variables?: Record<string, unknown>): Promise<Outcome> => {
    const iterator = socket.iterate({ query, variables })
    try {
      const first = await iterator.next()
      return first.value as Outcome
    } catch (errors) {
      return { errors: errors as GraphQLErrorShape[] }
    } finally {
      await iterator.return?.()
    }
  }

  const transports = [
    ['HTTP', overHttp],
    ['graphql-ws', overWs],
  ] as const

  const workspacesNamed = (name: string) => server.store.db.workspace.count({ where: { name } })
  const limitErrors = (outcome: Outcome) =>
    (outcome.errors ?? []).map((e) => ({ code: e.extensions?.code, limit: e.extensions?.limit }))

  describe.each(transports)('over %s', (_transport, send) => {
    it('refuses 5,000 aliases of one mutation field by the token limit, and creates nothing', async () => {
      const name = `aliases-${randomUUID()}`
      const fields = Array.from({ length: 5000 }, (_, i) => `a${i}: createWorkspace(name: "${name}") { id }`).join(' ')
      const outcome = await send(`mutation { ${fields} }`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxTokens' }])
      expect(outcome.errors![0]!.message).toBe(`Token limit of ${OPERATION_LIMITS.maxTokens} exceeded.`)
      expect(outcome.data ?? undefined).toBeUndefined()
      expect(await workspacesNamed(name)).toBe(0)
    })

    it('refuses 16 aliases (under the token limit) by the alias limit, and creates nothing', async () => {
      const name = `aliases-${randomUUID()}`
      const fields = Array.from({ length: 16 }, (_, i) => `a${i}: createWorkspace(name: "${name}") { id }`).join(' ')
      const outcome = await send(`mutation { ${fields} }`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxAliases' }])
      expect(outcome.errors![0]!.message).toBe('Aliases limit of 15 exceeded, found 16.')
      expect(await workspacesNamed(name)).toBe(0)
    })

    it('allows 15 aliases', async () => {
      const fields = Array.from({ length: 15 }, (_, i) => `a${i}: viewer { user { id } }`).join(' ')
      expect((await send(`{ ${fields} }`)).errors).toBeUndefined()
    })

    it('refuses thousands of fragments by the token limit', async () => {
      const spreads = Array.from({ length: 3000 }, (_, i) => `...F${i}`).join(' ')
      const fragments = Array.from({ length: 3000 }, (_, i) => `fragment F${i} on Viewer { user { id } }`).join('\n')
      const outcome = await send(`{ viewer { ${spreads} } }\n${fragments}`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxTokens' }])
    })

    it('refuses 51 directives, and creates nothing', async () => {
      const name = `directives-${randomUUID()}`
      const outcome = await send(`mutation { createWorkspace(name: "${name}") { id ${'name @include(if: true) '.repeat(51)} } }`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxDirectives' }])
      expect(outcome.errors![0]!.message).toBe('Directives limit of 50 exceeded, found 51.')
      expect(await workspacesNamed(name)).toBe(0)
    })

    it('refuses a 1 MB document (one comment: a single token) before parsing it, and creates nothing', async () => {
      const name = `size-${randomUUID()}`
      const outcome = await send(`mutation { createWorkspace(name: "${name}") { id } }\n#${'x'.repeat(1024 * 1024)}`)
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxDocumentBytes' }])
      expect(await workspacesNamed(name)).toBe(0)
    })

    // The cost of a list is its page size times its items' cost; the page size usually comes in a variable.
    const costly = `mutation ($input: CreateTaskInput!, $last: Int) {
      createTask(input: $input) { id sessions { id messages(last: $last) { id content kind } turns(last: $last) { id } } }
    }`

    it('refuses a mutation whose cost (page sizes from variables) is over the limit, and creates nothing', async () => {
      const title = `costly-${randomUUID()}`
      const outcome = await send(costly, { input: { workspaceId, title }, last: 1_000_000 })
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxCost' }])
      expect(outcome.errors![0]!.message).toMatch(/^Query Cost limit of 1000000 exceeded, found \d+/)
      expect(await server.store.db.task.count({ where: { title } })).toBe(0)
    })

    it('runs the same mutation with a small page size', async () => {
      const title = `cheap-${randomUUID()}`
      const outcome = await send(costly, { input: { workspaceId, title }, last: 10 })
      expect(outcome.errors).toBeUndefined()
      expect(await server.store.db.task.count({ where: { title } })).toBe(1)
    })

    // Costs are kept per document and page sizes: the same text with another page size is costed anew.
    it('refuses the same mutation again with a big page size after the small one ran', async () => {
      const title = `costly-again-${randomUUID()}`
      const outcome = await send(costly, { input: { workspaceId, title }, last: 1_000_000 })
      expect(limitErrors(outcome)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxCost' }])
      expect(await server.store.db.task.count({ where: { title } })).toBe(0)
    })
  })

  it('refuses an HTTP body over the body limit with 413 and a code, and creates nothing', async () => {
    const name = `body-${randomUUID()}`
    const response = await fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        query: `mutation ($pad: String) { createWorkspace(name: "${name}") { id } }`,
        variables: { pad: 'x'.repeat(OPERATION_LIMITS.maxRequestBodyBytes) },
      }),
    })
    expect(response.status).toBe(413)
    const body = (await response.json()) as Outcome
    expect(limitErrors(body)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxRequestBodyBytes' }])
    expect(JSON.stringify(body)).not.toContain('xxxx')
    expect(await workspacesNamed(name)).toBe(0)
  })

  it('refuses a chunked HTTP body (no Content-Length) once it grows over the body limit', async () => {
    const name = `chunked-${randomUUID()}`
    const text = JSON.stringify({
      query: `mutation ($pad: String) { createWorkspace(name: "${name}") { id } }`,
      variables: { pad: 'x'.repeat(OPERATION_LIMITS.maxRequestBodyBytes) },
    })
    const chunks = text.match(/[\s\S]{1,65536}/g)!.map((chunk) => new TextEncoder().encode(chunk))
    const response = await fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift()
          if (next) controller.enqueue(next)
          else controller.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)
    expect(response.status).toBe(413)
    const body = (await response.json()) as Outcome
    expect(limitErrors(body)).toEqual([{ code: 'BAD_USER_INPUT', limit: 'maxRequestBodyBytes' }])
    expect(await workspacesNamed(name)).toBe(0)
  })

  describe('the deepest real documents of the schema pass every limit', () => {
    it('tasks with every summary field at the largest page (first: 500), boot, the cached boot', async () => {
      await ok(server.graphqlUrl, token, TasksWithSummariesDocument, { workspaceId, first: 500 })
      await ok(server.graphqlUrl, token, BootWithSummariesDocument, { workspaceId })
      await ok(server.graphqlUrl, token, CachedBootDocument, { workspaceId })
    })

    it('a session detail, and the sessionEvents and workspaceEvents subscriptions', async () => {
      const task = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'deep' } })).createTask
      const session = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: task.id, agentProfile: 'mock' } }))
        .startSession
      await ok(server.graphqlUrl, token, SessionDetailDocument, { id: session.id })
      const joined = await overWs(print(SessionEventsDocument), { sessionId: session.id })
      expect(joined.errors).toBeUndefined()
      expect((joined.data as { sessionEvents: { __typename: string } }).sessionEvents.__typename).toBe('SessionJoined')
      const feed = socket.iterate({ query: print(WorkspaceEventsDocument), variables: { workspaceId } })
      const next = feed.next()
      await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'feed event' } })
      expect(((await next).value as Outcome).errors).toBeUndefined()
      await feed.return?.()
    })
  })
})
