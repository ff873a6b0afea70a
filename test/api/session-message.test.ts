import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { AddMessageDocument, CreateTaskDocument, SessionDetailDocument, SessionMessageDocument, StartSessionDocument } from '../generated/graphql.ts'

/**
 * Session.message(id:): the one-message read a client makes after a MessageUpdated with a null append
 * (or one that leaves a gap), instead of reading the session's newest messages.
 */
describe.each(PROVIDERS)('Session.message(id:) (%s)', (provider) => {
  let server: TestServer
  let alice: { token: string; workspaceId: string }
  let bob: { token: string; workspaceId: string }

  /** A task with a session whose turn answered `prompt` (sent with `clientMessageId`), settled. */
  async function conversation(user: { token: string; workspaceId: string }, clientMessageId: string, prompt: string) {
    const url = server.graphqlUrl
    const taskId = (await ok(url, user.token, CreateTaskDocument, { input: { workspaceId: user.workspaceId, title: 'read one message' } })).createTask.id
    const sessionId = (await ok(url, user.token, StartSessionDocument, { input: { taskId } })).startSession.id
    await ok(url, user.token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId, content: prompt } })
    await sessionSettled(server, sessionId)
    const messages = (await ok(url, user.token, SessionDetailDocument, { id: sessionId, last: 100 })).session!.messages
    const agent = messages.find((m) => m.author === 'AGENT' && m.kind === 'MESSAGE')!
    const user_ = messages.find((m) => m.id === clientMessageId)!
    expect(agent, 'the mock agent answered').toBeDefined()
    expect(user_).toBeDefined()
    return { taskId, sessionId, agent, user: user_ }
  }

  let mine: Awaited<ReturnType<typeof conversation>>

  beforeAll(async () => {
    server = await startTestServer(provider)
    alice = await userWithWorkspace(server, 'Alice')
    bob = await userWithWorkspace(server, 'Bob')
    mine = await conversation(alice, 'prompt-shared-id', 'hello from alice')
  }, 90_000)
  afterAll(() => server?.close())

  const read = (token: string, sessionId: string, id: string) => http(server.graphqlUrl, token, SessionMessageDocument, { sessionId, id })

  it('answers an agent message by its row id and a user message by its client id, whole and at their current version', async () => {
    const agent = await read(alice.token, mine.sessionId, mine.agent.id)
    expect(agent.errors).toBeUndefined()
    expect(agent.data!.session!.message).toEqual(mine.agent)
    const user = await read(alice.token, mine.sessionId, 'prompt-shared-id')
    expect(user.data!.session!.message).toEqual(mine.user)
    expect(user.data!.session!.message!.content).toBe('hello from alice')
  })

  it('is null for an unknown id, for a message of another session, and for the row id of a user message (it answers to its client id only)', async () => {
    expect((await read(alice.token, mine.sessionId, 'no-such-message')).data!.session!.message).toBeNull()
    const other = await conversation(alice, 'prompt-other', 'another session')
    expect((await read(alice.token, other.sessionId, mine.agent.id)).data!.session!.message).toBeNull()
    expect((await read(alice.token, mine.sessionId, other.agent.id)).data!.session!.message).toBeNull()
    const row = await server.store.db.message.findFirstOrThrow({ where: { sessionId: mine.sessionId, clientMessageId: 'prompt-shared-id' } })
    expect(row.id).not.toBe('prompt-shared-id')
    expect((await read(alice.token, mine.sessionId, row.id)).data!.session!.message).toBeNull()
  }, 90_000)

  it("never shows a message of another workspace: FORBIDDEN through its session, null through the caller's own", async () => {
    const result = await read(bob.token, mine.sessionId, mine.agent.id)
    expect(errorCodes(result)).toEqual(['FORBIDDEN'])
    expect(result.data?.session ?? null).toBeNull()
    expect(JSON.stringify(result)).not.toContain(mine.agent.content)

    // Bob's own session, asked for Alice's messages: by row id, and by a client id both workspaces use.
    const his = await conversation(bob, 'prompt-shared-id', 'hello from bob')
    expect((await read(bob.token, his.sessionId, mine.agent.id)).data!.session!.message).toBeNull()
    const same = (await read(bob.token, his.sessionId, 'prompt-shared-id')).data!.session!.message
    expect(same).toEqual(his.user)
    expect(same!.content).toBe('hello from bob')
    expect((await read(alice.token, mine.sessionId, 'prompt-shared-id')).data!.session!.message!.content).toBe('hello from alice')
  }, 90_000)

  it('is UNAUTHENTICATED without a token', async () => {
    expect(errorCodes(await read('', mine.sessionId, mine.agent.id))).toEqual(['UNAUTHENTICATED'])
  })
})
