// The statements one addMessage sends before its prompt reaches the session's queue. Its
// preconditions (the client id not yet used, the session one of the task) are checked once, by
// the layer that routes the command (SessionCommands), not again by the owner that accepts it.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { withoutAccessReads } from '../support/statements.ts'
import { AddMessageDocument, CreateTaskDocument, StartSessionDocument } from '../generated/graphql.ts'

/**
 * Before the checks ran in one layer: 22 statements. SessionCommands and SessionService each
 * looked the client id (the task's workspace, then the message) and the session up, the store
 * read the session and its workspace once more, and each of the prompt's two source events read
 * the workspace again.
 */
const STATEMENTS_BEFORE = 22
/** The access reads (test/support/statements.ts), at most: the token and its user (2), the membership (1). */
const ACCESS_READS_AT_MOST = 3

/**
 * Besides the access reads: the task's workspace for the access check (1), the preconditions
 * (client id: 2, session: 1), the owner (2), the session and its workspace for the prompt (2),
 * the prompt's transaction (count, turn, message, commit: 4), the task's activity time (2), the
 * message returned (1).
 */
const STATEMENTS_OF_ONE_PROMPT = 15

describe.each(PROVIDERS)('statements of one addMessage (%s)', (provider) => {
  let server: TestServer
  let token: string
  let workspaceId: string
  const statements: string[] = []

  beforeAll(async () => {
    server = await startTestServer(provider, { onQuery: (sql) => statements.push(sql) })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'prompter'))
  })
  afterAll(() => server?.close())

  it('a queued prompt is accepted with the checks made once', async () => {
    const url = server.graphqlUrl
    const taskId = (await ok(url, token, CreateTaskDocument, { input: { workspaceId, title: 'count' } })).createTask.id
    const sessionId = (await ok(url, token, StartSessionDocument, { input: { taskId } })).startSession.id
    // The agent waits on a permission nobody answers: the next prompt queues, and no runtime or
    // agent write runs while it is counted.
    const waiting = JSON.stringify({ script: [{ permission: { title: 'hold', wait: true } }] })
    await ok(url, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: waiting } })
    await eventually(() => server.store.db.message.findFirst({ where: { sessionId, kind: 'PERMISSION_REQUEST', status: 'PENDING' } }))
    await server.projector.idle()
    // The runtime's writes of the request (its row, its source event) may still be on their way:
    // a second without a statement (a loaded machine stalls between them for hundreds of ms).
    await eventually(async () => {
      const before = statements.length
      await new Promise((resolve) => setTimeout(resolve, 1000))
      return statements.length === before
    })
    // The projector re-derives the summary after the prompt's source events, and the Git monitor
    // observes each running session on its own clock (a session, its repositories and their
    // observations): neither is the request's statements.
    server.projector.stop()
    await server.git.stop()

    statements.length = 0
    const clientMessageId = randomUUID()
    const { addMessage } = await ok(url, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId, content: 'queued' } })
    const counted = withoutAccessReads(statements)
    expect(statements.length - counted.length).toBeLessThanOrEqual(ACCESS_READS_AT_MOST)

    expect(addMessage.replayed).toBe(false)
    const turn = await server.store.db.turn.findFirstOrThrow({ where: { messages: { some: { clientMessageId } } } })
    expect(turn.queuedAt).not.toBeNull()
    expect(counted, counted.join('\n')).toHaveLength(STATEMENTS_OF_ONE_PROMPT)
    expect(statements.length).toBeLessThan(STATEMENTS_BEFORE)
  })
})
