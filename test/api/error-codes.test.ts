import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { CreateWorkspaceDocument, ViewerDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

// Planted in every bad request. Not a GraphQL Name (it has a space and a hyphen), so it can only reach
// a response by being echoed from a value: a variable, a literal, a JSON body excerpt.
const MARKER = 'planted-secret 7f3a'
const CONTRACT_CODES = ['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'BAD_USER_INPUT', 'CONFLICT', 'RATE_LIMITED', 'INTERNAL_SERVER_ERROR', 'UNAVAILABLE']
const CREATE = 'mutation ($name: String!) { createWorkspace(name: $name) { id } }'
const CREATE_TASK = 'mutation ($input: CreateTaskInput!) { createTask(input: $input) { id } }'

interface ErrorShape {
  message: string
  extensions?: Record<string, unknown>
}

/** The error contract for a response text: each error has a contract code, nothing echoes or leaks internals. */
function expectClientErrors(text: string, errors: ErrorShape[] | undefined, code: string) {
  expect(errors?.length).toBeGreaterThan(0)
  for (const error of errors!) {
    expect(error.extensions?.code).toBe(code)
    expect(CONTRACT_CODES).toContain(error.extensions?.code)
    expect(error.extensions).not.toHaveProperty('originalError')
    expect(error.extensions).not.toHaveProperty('http')
  }
  expect(text).not.toContain(MARKER)
  expect(text).not.toContain('planted-secret')
  expect(text).not.toMatch(/\bat .*\.(ts|js):\d+/) // no stack frames
}

describe('every error a client can cause carries a contract code and echoes nothing (sqlite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'errors'))
  })
  afterAll(() => server?.close())

  const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const getUrl = (query: string) => `?query=${encodeURIComponent(query)}`
  const httpCases: { name: string; init: () => RequestInit & { search?: string }; status?: number }[] = [
    { name: 'variable of the wrong type', init: () => json({ query: CREATE, variables: { name: { text: MARKER } } }), status: 400 },
    { name: 'variable missing', init: () => json({ query: CREATE }), status: 400 },
    { name: 'input object missing a required field', init: () => json({ query: CREATE_TASK, variables: { input: { title: MARKER } } }), status: 400 },
    { name: 'input object with an unknown key', init: () => json({ query: CREATE_TASK, variables: { input: { workspaceId, title: 't', [MARKER]: MARKER } } }), status: 400 },
    { name: 'scalar literal of the wrong type', init: () => json({ query: `mutation { createWorkspace(name: { text: "${MARKER}" }) { id } }` }) },
    { name: 'string token where none belongs (syntax)', init: () => json({ query: `mutation { createWorkspace(name: "x") { id "${MARKER}" } }` }) },
    { name: 'unknown field (validation)', init: () => json({ query: `mutation { createWorkspace(name: "${MARKER}") { id nope } }` }) },
    { name: 'malformed JSON', init: () => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"query": "mutation { createWorkspace(name: \\"${MARKER}` }), status: 400 },
    { name: 'no query', init: () => json({ variables: { name: MARKER } }) },
    { name: 'query that is not a string', init: () => json({ query: { text: MARKER } }), status: 400 },
    { name: 'variables that are not an object', init: () => json({ query: CREATE, variables: MARKER }), status: 400 },
    { name: 'operation name naming no operation', init: () => json({ query: `mutation A { createWorkspace(name: "${MARKER}") { id } }`, operationName: 'B' }), status: 400 },
    { name: 'batched array', init: () => ({ ...json([{ query: CREATE, variables: { name: MARKER } }]) }), status: 400 },
    { name: 'mutation over GET', init: () => ({ method: 'GET', search: getUrl(`mutation { createWorkspace(name: "${MARKER}") { id } }`), headers: { accept: 'application/json' } }), status: 405 },
    { name: 'unsupported content type', init: () => ({ method: 'POST', headers: { 'content-type': 'text/plain' }, body: `mutation { createWorkspace(name: "${MARKER}") { id } }` }), status: 415 },
    { name: 'Accept allowing no response type', init: () => ({ ...json({ query: CREATE, variables: { name: MARKER } }), headers: { 'content-type': 'application/json', accept: 'image/png' } }), status: 406 },
    { name: 'PUT', init: () => ({ ...json({ query: CREATE, variables: { name: MARKER } }), method: 'PUT' }), status: 405 },
  ]

  it.each(httpCases)('HTTP: $name → BAD_USER_INPUT, nothing created', async ({ init, status }) => {
    const before = await server.store.db.workspace.count()
    const { search = '', ...request } = init()
    const response = await fetch(`${server.graphqlUrl}${search}`, {
      ...request,
      headers: { authorization: `Bearer ${token}`, ...(request.headers as Record<string, string>) },
    })
    if (status) expect(response.status).toBe(status)
    expect(response.headers.get('content-type')).toMatch(/json/)
    const text = await response.text()
    expectClientErrors(text, (JSON.parse(text) as { errors?: ErrorShape[] }).errors, 'BAD_USER_INPUT')
    expect(await server.store.db.workspace.count()).toBe(before)
  })

  it('HTTP: the value is left out of the message, what locates the mistake stays', async () => {
    const post = async (body: unknown) =>
      (await (await fetch(server.graphqlUrl, { ...json(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } })).json()) as {
        errors: (ErrorShape & { locations?: unknown[] })[]
      }
    const wrongType = await post({ query: CREATE, variables: { name: { text: MARKER } } })
    expect(wrongType.errors[0]!.message).toBe('Variable "$name" got an invalid value; expected type "String!".')
    expect(wrongType.errors[0]!.locations).toEqual([{ line: 1, column: 11 }])
    const missingField = await post({ query: CREATE_TASK, variables: { input: { title: MARKER } } })
    expect(missingField.errors[0]!.message).toBe('Variable "$input" got an invalid value; Field "workspaceId" of required type "ID!" was not provided.')
    const syntax = await post({ query: `mutation { createWorkspace(name: "x") { id "${MARKER}" } }` })
    expect(syntax.errors[0]!.message).toBe('Syntax Error: Expected Name, found String.')
    const literal = await post({ query: `mutation { createWorkspace(name: { text: "${MARKER}" }) { id } }` })
    expect(literal.errors[0]!.message).toBe('String cannot represent a non string value.')
  })

  it('HTTP: a failure inside the server is INTERNAL_SERVER_ERROR with a generic message, whatever it said', async () => {
    const db = server.store.db
    // The store's own database handle fails for workspace writes, as a broken connection would.
    server.store.db = new Proxy(db, {
      get: (target, property, receiver) => {
        if (property === 'workspace') throw new Error(`database exploded near ${MARKER}`)
        return Reflect.get(target, property, receiver) as unknown
      },
    })
    try {
      const response = await fetch(server.graphqlUrl, { ...json({ query: CREATE, variables: { name: 'ok' } }), headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } })
      const text = await response.text()
      const errors = (JSON.parse(text) as { errors?: ErrorShape[] }).errors
      expectClientErrors(text, errors, 'INTERNAL_SERVER_ERROR')
      expect(errors![0]!.message).toBe('Unexpected error.')
      expect(text).not.toContain('exploded')
    } finally {
      server.store.db = db
    }
  })

  const wsCases: { name: string; payload: () => Record<string, unknown> }[] = [
    { name: 'variable of the wrong type', payload: () => ({ query: CREATE, variables: { name: { text: MARKER } } }) },
    { name: 'variable missing', payload: () => ({ query: CREATE }) },
    { name: 'input object with an unknown key', payload: () => ({ query: CREATE_TASK, variables: { input: { workspaceId, title: 't', [MARKER]: 1 } } }) },
    { name: 'scalar literal of the wrong type', payload: () => ({ query: `mutation { createWorkspace(name: { text: "${MARKER}" }) { id } }` }) },
    { name: 'string token where none belongs (syntax)', payload: () => ({ query: `mutation { createWorkspace(name: "x") { id "${MARKER}" } }` }) },
    { name: 'unknown field (validation)', payload: () => ({ query: `mutation { createWorkspace(name: "${MARKER}") { id nope } }` }) },
    { name: 'operation name naming no operation', payload: () => ({ query: `mutation A { createWorkspace(name: "${MARKER}") { id } }`, operationName: 'B' }) },
    { name: 'subscription with a variable of the wrong type', payload: () => ({ query: 'subscription ($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }', variables: { w: [MARKER] } }) },
  ]

  it.each(wsCases)('graphql-ws: $name → BAD_USER_INPUT, nothing created, the socket stays open', async ({ payload }) => {
    const before = await server.store.db.workspace.count()
    const ws = await rawGraphqlWs(server.wsUrl, token)
    try {
      ws.send({ id: 'bad', type: 'subscribe', payload: payload() })
      const frame = await ws.waitFor((f) => f.id === 'bad' && (f.type === 'error' || f.type === 'next'))
      expect(frame).toBeDefined()
      const errors = (frame!.type === 'error' ? frame!.payload : frame!.payload?.errors) as ErrorShape[]
      expectClientErrors(JSON.stringify(frame), errors, 'BAD_USER_INPUT')
      // The operation failed, not the connection.
      ws.send({ id: 'after', type: 'subscribe', payload: { query: '{ viewer { user { name } } }' } })
      const after = await ws.waitFor((f) => f.id === 'after' && f.type === 'next')
      expect(after?.payload?.data).toEqual({ viewer: { user: { name: 'errors' } } })
    } finally {
      ws.socket.close()
    }
    expect(await server.store.db.workspace.count()).toBe(before)
  })

  it('graphql-ws: a failure inside the server is INTERNAL_SERVER_ERROR with a generic message', async () => {
    const client = await wsClient(server.wsUrl, token)
    const db = server.store.db
    server.store.db = new Proxy(db, {
      get: (target, property, receiver) => {
        if (property === 'workspace') throw new Error(`database exploded near ${MARKER}`)
        return Reflect.get(target, property, receiver) as unknown
      },
    })
    try {
      const result = await wsExecute(client, CreateWorkspaceDocument, { name: 'ok' })
      expectClientErrors(JSON.stringify(result), result.errors as ErrorShape[], 'INTERNAL_SERVER_ERROR')
      expect(result.errors![0]!.message).toBe('Unexpected error.')
    } finally {
      server.store.db = db
      await client.dispose()
    }
  })
})

describe('a subscription stream failing inside the server (sqlite, no cohorts)', () => {
  let server: TestServer
  beforeAll(async () => {
    // Without cohorts the stream's own error reaches graphql-ws, which wraps it with its originalError.
    server = await startTestServer('sqlite', { multiplexSubscriptions: false })
  })
  afterAll(() => server?.close())

  it('ends with an INTERNAL_SERVER_ERROR error frame that says nothing of the cause', async () => {
    const { token, workspaceId } = await userWithWorkspace(server, 'stream')
    const client = await wsClient(server.wsUrl, token)
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    await wsExecute(client, ViewerDocument) // the subscription is registered once a later operation is answered
    await eventually(async () => (await (await fetch(`${server.url}/metrics`)).text()).includes('graphql_subscriptions_active{transport="ws",field="workspaceEvents"} 1'))
    // A payload no publisher of this server writes (a foreign or buggy one): the feed's loader throws a TypeError.
    await server.pubsub.publish('workspace', workspaceId, { type: 'TaskUpserted', workspaceId, taskId: undefined as unknown as string, sequence: 0 })
    await feed.waitFor(1)
    const failure = feed.failure as ErrorShape[]
    expect(failure).toHaveLength(1)
    expect(failure[0]).toEqual({ message: 'Unexpected error.', extensions: { code: 'INTERNAL_SERVER_ERROR' } })
    await client.dispose()
  })
})
