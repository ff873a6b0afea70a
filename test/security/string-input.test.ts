import { randomUUID } from 'node:crypto'
import type { Client } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { wsClient } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { postOperation, socketOperation, taskWithSession, type Answer, type Operation } from './harness.ts'

/**
 * MAPPING.md v1.3 "Bad input stays bad input": a string with a lone UTF-16 surrogate or a NUL, in
 * any argument, is BAD_USER_INPUT on SQLite and PostgreSQL alike, over HTTP and WebSocket, and
 * changes nothing. Before, a lone surrogate answered INTERNAL_SERVER_ERROR on both databases and a
 * NUL on PostgreSQL, from inside a resolver.
 */

/** What is planted. In variables it travels as a JSON escape (`\ud800`, `\u0000`); inline, inside the document text. */
const BAD = [
  { kind: 'a lone high surrogate', value: '\ud800' },
  { kind: 'a lone low surrogate', value: '\udc00' },
  { kind: 'a NUL character', value: '\u0000' },
]

interface Fixture {
  workspaceId: string
  taskId: string
  sessionId: string
}

interface Row {
  /** Which argument kind, and how it is sent. */
  what: string
  by: 'user' | 'admin'
  operation: (bad: string, f: Fixture) => Operation
  /** Subscriptions are asked over WebSocket only (the page's transport for them). */
  transports?: ('HTTP' | 'WebSocket')[]
}

const ROWS: Row[] = [
  {
    what: 'a name: createWorkspace(name: $name)',
    by: 'user',
    operation: (bad) => ({ query: 'mutation ($name: String!) { createWorkspace(name: $name) { id } }', variables: { name: `Acme ${bad}` } }),
  },
  {
    what: 'a name, inline: createWorkspace(name: "…")',
    by: 'user',
    operation: (bad) => ({ query: `mutation { createWorkspace(name: "Acme ${bad}") { id } }` }),
  },
  {
    what: 'a user name: createUser(name: $name)',
    by: 'admin',
    operation: (bad) => ({ query: 'mutation ($name: String!) { createUser(name: $name) { token } }', variables: { name: `ann${bad}` } }),
  },
  {
    what: 'an ID: task(id: $id)',
    by: 'user',
    operation: (bad, f) => ({ query: 'query ($id: ID!) { task(id: $id) { id } }', variables: { id: `${f.taskId}${bad}` } }),
  },
  {
    what: 'an ID, inline: task(id: "…")',
    by: 'user',
    operation: (bad, f) => ({ query: `{ task(id: "${f.taskId}${bad}") { id } }` }),
  },
  {
    what: 'an ID: session(id: $id)',
    by: 'user',
    operation: (bad, f) => ({ query: 'query ($id: ID!) { session(id: $id) { id } }', variables: { id: `${bad}${f.sessionId}` } }),
  },
  {
    what: 'IDs in a list: taskStatusSummaries(taskIds: $ids)',
    by: 'user',
    operation: (bad, f) => ({ query: 'query ($ids: [ID!]!) { taskStatusSummaries(taskIds: $ids) { taskId } }', variables: { ids: [f.taskId, `${f.taskId}${bad}`] } }),
  },
  {
    what: 'a cursor: tasks(after: $after)',
    by: 'user',
    operation: (bad, f) => ({
      query: 'query ($ws: ID!, $after: String) { tasks(workspaceId: $ws, after: $after) { edges { cursor } } }',
      variables: { ws: f.workspaceId, after: `c${bad}` },
    }),
  },
  {
    what: 'a cursor, inline: tasks(after: "…")',
    by: 'user',
    operation: (bad, f) => ({ query: `{ tasks(workspaceId: "${f.workspaceId}", after: "c${bad}") { edges { cursor } } }` }),
  },
  {
    what: 'message content nested in a variable: addMessage(input: $input)',
    by: 'user',
    operation: (bad, f) => ({
      query: 'mutation ($input: AddMessageInput!) { addMessage(input: $input) { replayed } }',
      variables: { input: { taskId: f.taskId, sessionId: f.sessionId, clientMessageId: randomUUID(), content: `Go on ${bad} please` } },
    }),
  },
  {
    what: 'message content, inline in an input object: addMessage(input: { content: "…" })',
    by: 'user',
    operation: (bad, f) => ({
      query: `mutation { addMessage(input: { taskId: "${f.taskId}", sessionId: "${f.sessionId}", clientMessageId: "${randomUUID()}", content: "Go on ${bad}" }) { replayed } }`,
    }),
  },
  {
    what: 'a repository name in a list in an input object: createTask(input: $input)',
    by: 'user',
    operation: (bad, f) => ({
      query: 'mutation ($input: CreateTaskInput!) { createTask(input: $input) { id } }',
      variables: { input: { workspaceId: f.workspaceId, title: 'ok', repositories: [{ name: `repo${bad}` }] } },
    }),
  },
  {
    what: 'an agent profile name: startSession(input: $input) (would store a launch error)',
    by: 'user',
    operation: (bad, f) => ({
      query: 'mutation ($input: StartSessionInput!) { startSession(input: $input) { id } }',
      variables: { input: { taskId: f.taskId, agentProfile: `mock${bad}` } },
    }),
  },
  {
    what: 'a key of an input object variable: createTask(input: { "x…": 1 })',
    by: 'user',
    operation: (bad, f) => ({
      query: 'mutation ($input: CreateTaskInput!) { createTask(input: $input) { id } }',
      variables: { input: { workspaceId: f.workspaceId, title: 'ok', [`x${bad}`]: 1 } },
    }),
  },
  {
    what: 'an ID of a shared (multiplexed) subscription: workspaceEvents(workspaceId: $ws)',
    by: 'user',
    transports: ['WebSocket'],
    operation: (bad, f) => ({ query: 'subscription ($ws: ID!) { workspaceEvents(workspaceId: $ws) { __typename } }', variables: { ws: `${f.workspaceId}${bad}` } }),
  },
  {
    what: 'a subscription cursor: workspaceEvents(after: $after)',
    by: 'user',
    transports: ['WebSocket'],
    operation: (bad, f) => ({
      query: 'subscription ($ws: ID!, $after: String) { workspaceEvents(workspaceId: $ws, after: $after) { __typename } }',
      variables: { ws: f.workspaceId, after: `c${bad}` },
    }),
  },
]

const CASES = ROWS.flatMap((row) =>
  BAD.flatMap((bad) => (row.transports ?? (['HTTP', 'WebSocket'] as const)).map((transport) => ({ ...row, ...bad, transport }))),
)

describe.each(PROVIDERS)('strings with a lone surrogate or NUL are BAD_USER_INPUT and change nothing (%s)', (provider) => {
  let server: TestServer
  let token: string
  let fixture: Fixture
  let sockets: Record<Row['by'], Client>

  beforeAll(async () => {
    server = await startTestServer(provider)
    const user = await userWithWorkspace(server, 'strings')
    token = user.token
    fixture = { workspaceId: user.workspaceId, ...(await taskWithSession(server, token, user.workspaceId, 'Fix login')) }
    await sessionSettled(server, fixture.sessionId)
    sockets = { user: await wsClient(server.wsUrl, token), admin: await wsClient(server.wsUrl, server.adminToken) }
  })
  afterAll(async () => {
    await Promise.all(Object.values(sockets ?? {}).map((s) => s.dispose()))
    await server?.close()
  })

  /** Everything a refused operation could have written. */
  const snapshot = async () => {
    const db = server.store.db
    const [users, workspaces, tasks, repositories, sessions, messages, launchErrors] = await Promise.all([
      db.user.count(),
      db.workspace.count(),
      db.task.count(),
      db.taskRepository.count(),
      db.session.count(),
      db.message.count(),
      db.taskLaunchError.count(),
    ])
    return { users, workspaces, tasks, repositories, sessions, messages, launchErrors }
  }

  it.each(CASES)('$transport, $what, with $kind → BAD_USER_INPUT, nothing changed', async ({ operation, by, value, transport }) => {
    const sent = operation(value, fixture)
    const before = await snapshot()
    const answer: Answer =
      transport === 'HTTP' ? await postOperation(server, by === 'admin' ? server.adminToken : token, sent) : await socketOperation(sockets[by], sent)
    expect(answer.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT'])
    expect(answer.data ?? null).toBeNull()
    // Named by argument or variable and path, never quoted: the message carries no part of the value.
    expect(answer.errors![0]!.message).not.toContain(value)
    expect(await snapshot()).toEqual(before)
  })

  it('the refusal names the variable and the path inside it, and where the literal is', async () => {
    const nested = await postOperation(server, token, ROWS[9]!.operation('\ud800', fixture))
    expect(nested.errors![0]!.message).toBe(
      'Variable "$input" at "input.content" contains a lone UTF-16 surrogate or a NUL character (U+0000); strings must be well-formed Unicode without NUL.',
    )
    const inline = await postOperation(server, token, ROWS[10]!.operation('\u0000', fixture))
    expect(inline.errors![0]!.message).toBe(
      'Argument "input" of field "addMessage" at "input.content" contains a lone UTF-16 surrogate or a NUL character (U+0000); strings must be well-formed Unicode without NUL.',
    )
    // Escaped the GraphQL way inside the document: the same refusal.
    const escaped = await postOperation(server, token, { query: 'mutation { createWorkspace(name: "a\\u0000b") { id } }' })
    expect(escaped.errors![0]!.message).toBe(
      'Argument "name" of field "createWorkspace" contains a lone UTF-16 surrogate or a NUL character (U+0000); strings must be well-formed Unicode without NUL.',
    )
  })

  it('well-formed strings around the bad ones still work: a surrogate pair, other control characters', async () => {
    const answer = await postOperation(server, token, {
      query: 'mutation ($name: String!) { createWorkspace(name: $name) { name } }',
      variables: { name: 'Acme 😀 \u0001 Ltd' },
    })
    expect(answer.errors).toBeUndefined()
    expect((answer.data!.createWorkspace as { name: string }).name).toBe('Acme 😀 \u0001 Ltd')
  })
})
