import type { Client } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { wsClient } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { echoesMoreThan, postOperation, socketOperation, type Answer, type Operation } from './harness.ts'

/**
 * MAPPING.md v1.3: no error message repeats more than 64 characters of what the client sent. Each
 * row sends one long value (a repeating unit that is also a valid GraphQL Name, so it can stand
 * for a name, an id, a profile or a token) and asserts that the whole answer, every message and
 * extension included, holds no run of more than 64 of its characters.
 */
const long = (characters: number) => 'Qz7'.repeat(Math.ceil(characters / 3)).slice(0, characters)
const MB = 1024 * 1024

interface Fixture {
  workspaceId: string
  taskId: string
}

interface Row {
  /** What is sent, and why it used to come back. */
  what: string
  sent: string
  operation: (sent: string, f: Fixture) => Operation
  /** The code the answer carries (the refusal itself is not what these rows are about). */
  code: string
}

const ROWS: Row[] = [
  {
    what: 'a 1 MB agent profile name to startSession (its "Unknown agent profile" message, also stored as the launch error)',
    sent: long(MB),
    operation: (sent, f) => ({
      query: 'mutation ($input: StartSessionInput!) { startSession(input: $input) { id } }',
      variables: { input: { taskId: f.taskId, agentProfile: sent } },
    }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 10 kB id to task(id:) (NOT_FOUND named the id, in the message and extensions.id)',
    sent: long(10_000),
    operation: (sent) => ({ query: 'query ($id: ID!) { task(id: $id) { id } }', variables: { id: sent } }),
    code: 'NOT_FOUND',
  },
  {
    what: 'a 10 kB id to session(id:) through a mutation that requires it (dismissSessionError)',
    sent: long(10_000),
    operation: (sent) => ({ query: 'mutation ($id: ID!) { dismissSessionError(sessionId: $id) { id } }', variables: { id: sent } }),
    code: 'NOT_FOUND',
  },
  {
    what: 'a 10 kB user id to addWorkspaceMember (NOT_FOUND "User …")',
    sent: long(10_000),
    operation: (sent, f) => ({
      query: 'mutation ($user: ID!, $ws: ID!) { addWorkspaceMember(userId: $user, workspaceId: $ws) { id } }',
      variables: { user: sent, ws: f.workspaceId },
    }),
    code: 'NOT_FOUND',
  },
  {
    what: 'a 10 kB repository to setPullRequestAutomation (NOT_FOUND "Pull request of this task …")',
    sent: long(10_000),
    operation: (sent, f) => ({
      query: 'mutation ($input: PullRequestAutomationInput!) { setPullRequestAutomation(input: $input) { id } }',
      variables: { input: { taskId: f.taskId, repository: sent, number: 1, autoFix: true } },
    }),
    code: 'NOT_FOUND',
  },
  {
    what: 'a 1 MB variable of the wrong type (an object for an Int: graphql-js quotes the value)',
    sent: long(MB),
    operation: (sent, f) => ({
      query: 'query ($ws: ID!, $first: Int) { tasks(workspaceId: $ws, first: $first) { edges { cursor } } }',
      variables: { ws: f.workspaceId, first: { huge: sent } },
    }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 1 MB string where an Int variable belongs',
    sent: long(MB),
    operation: (sent, f) => ({
      query: 'query ($ws: ID!, $first: Int) { tasks(workspaceId: $ws, first: $first) { edges { cursor } } }',
      variables: { ws: f.workspaceId, first: sent },
    }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 100 kB string literal where an Int belongs ("Int cannot represent …: <value>")',
    sent: long(100_000),
    operation: (sent, f) => ({ query: `{ tasks(workspaceId: "${f.workspaceId}", first: "${sent}") { edges { cursor } } }` }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 100 kB unknown field name ("Cannot query field …")',
    sent: long(100_000),
    operation: (sent) => ({ query: `{ ${sent} }` }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 100 kB unknown argument name ("Unknown argument …")',
    sent: long(100_000),
    operation: (sent, f) => ({ query: `{ task(id: "${f.taskId}", ${sent}: 1) { id } }` }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 100 kB undefined variable name ("Variable … is not defined")',
    sent: long(100_000),
    operation: (sent) => ({ query: `{ task(id: $${sent}) { id } }` }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 100 kB unknown fragment name ("Unknown fragment …")',
    sent: long(100_000),
    operation: (sent) => ({ query: `{ viewer { ...${sent} } }` }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 100 kB name after the document (syntax error quoting the token)',
    sent: long(100_000),
    operation: (sent) => ({ query: `{ viewer { user { id } } } ${sent}` }),
    code: 'BAD_USER_INPUT',
  },
  {
    what: 'a 100 kB operation name naming no operation ("Unknown operation named …")',
    sent: long(100_000),
    operation: (sent) => ({ query: 'query A { viewer { user { id } } }', operationName: sent }),
    code: 'BAD_USER_INPUT',
  },
]

const CASES = ROWS.flatMap((row) => (['HTTP', 'WebSocket'] as const).map((transport) => ({ ...row, transport })))

describe('no error repeats more than 64 characters of what was sent (sqlite)', () => {
  let server: TestServer
  let token: string
  let fixture: Fixture
  let socket: Client

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    const user = await userWithWorkspace(server, 'echo')
    token = user.token
    const task = await postOperation(server, token, {
      query: 'mutation ($input: CreateTaskInput!) { createTask(input: $input) { id } }',
      variables: { input: { workspaceId: user.workspaceId, title: 'Echo' } },
    })
    fixture = { workspaceId: user.workspaceId, taskId: (task.data!.createTask as { id: string }).id }
    socket = await wsClient(server.wsUrl, token)
  })
  afterAll(async () => {
    await socket?.dispose()
    await server?.close()
  })

  it.each(CASES)('$transport: $what', async ({ sent, operation, code, transport }) => {
    const answer: Answer = transport === 'HTTP' ? await postOperation(server, token, operation(sent, fixture)) : await socketOperation(socket, operation(sent, fixture))
    expect(answer.errors?.length).toBeGreaterThan(0)
    expect(answer.errors![0]!.extensions?.code).toBe(code)
    for (const error of answer.errors!) {
      expect(echoesMoreThan(error.message, sent), error.message.slice(0, 200)).toBe(false)
      expect(echoesMoreThan(JSON.stringify(error.extensions ?? {}), sent)).toBe(false)
    }
    // Nowhere else in the answer either (data, locations, path).
    expect(echoesMoreThan(answer.text, sent)).toBe(false)
  })

  it('the launch error stored for an unknown 1 MB profile name names it by its first 64 characters', async () => {
    const sent = long(MB)
    await postOperation(server, token, ROWS[0]!.operation(sent, fixture))
    const stored = await server.store.db.taskLaunchError.findUniqueOrThrow({ where: { taskId: fixture.taskId } })
    expect(stored.message).toBe(`Unknown agent profile ${sent.slice(0, 64)}….`)
  })

  it('a NOT_FOUND id up to 64 characters still comes back whole, so a client can tell which one', async () => {
    const id = long(64)
    const answer = await postOperation(server, token, ROWS[1]!.operation(id, fixture))
    expect(answer.errors![0]!.message).toBe(`Task ${id} does not exist.`)
    expect(answer.errors![0]!.extensions?.id).toBe(id)
  })
})
