import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { gitRepo } from '../support/git-repo.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  CreateUserDocument,
  FocusSessionDocument,
  RefreshSessionGitDocument,
  SessionEventsDocument,
  StartSessionDocument,
  ViewerDocument,
  WorkspaceEventsDocument,
} from '../generated/graphql.ts'

const script = (...steps: object[]) => JSON.stringify({ script: steps })

describe('session streams over graphql-ws (sqlite, real mock agents)', () => {
  let server: TestServer
  let token: string
  let outsider: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    const owner = await userWithWorkspace(server, 'dev')
    token = owner.token
    workspaceId = owner.workspaceId
    outsider = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'out' })).createUser.token
  })
  afterAll(() => server?.close())

  async function newSession(title = 't', repositories?: { name: string; localPath: string; baseBranch: string }[]) {
    const task = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title, repositories } })).createTask
    const taskId = task.id
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const send = (content: string) =>
      ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
    return { taskId, sessionId, send, repositoryIds: task.repositories.map((r) => r.id) }
  }
  const settled = (sessionId: string) => sessionSettled(server, sessionId)

  it('sends the snapshot only when the connection newly joins; a duplicate subscribe gets SessionJoined without it', async () => {
    const { sessionId, send } = await newSession()
    await send('hello')
    await settled(sessionId)
    const client = await wsClient(server.wsUrl, token)
    const first = wsSubscribe(client, SessionEventsDocument, { sessionId })
    const [joined] = await first.waitFor(1)
    const event = joined?.data?.sessionEvents
    expect(event).toMatchObject({ __typename: 'SessionJoined', sessionId, snapshot: { session: { id: sessionId } } })
    expect((event as { snapshot: { messages: { content: string }[] } }).snapshot.messages.map((m) => m.content)).toEqual([
      'hello',
      'echo: hello',
    ])
    const duplicate = wsSubscribe(client, SessionEventsDocument, { sessionId })
    expect((await duplicate.waitFor(1))[0]?.data?.sessionEvents).toEqual({ __typename: 'SessionJoined', sessionId, snapshot: null })

    // Both subscriptions see live events.
    await send('again')
    await eventually(() => first.events.some((e) => JSON.stringify(e).includes('echo: again')) && duplicate.events.some((e) => JSON.stringify(e).includes('echo: again')))

    // Membership ends with the connection's last subscription: then a new subscribe joins anew.
    first.dispose()
    duplicate.dispose()
    await wsExecute(client, ViewerDocument)
    const rejoined = wsSubscribe(client, SessionEventsDocument, { sessionId })
    expect((await rejoined.waitFor(1))[0]?.data?.sessionEvents).toMatchObject({ snapshot: { session: { id: sessionId } } })
    rejoined.dispose()
    await client.dispose()
  })

  it('streams live events in order: user message, turn start, coalesced agent message, turn completion', async () => {
    const { sessionId, send } = await newSession()
    const client = await wsClient(server.wsUrl, token)
    const events = wsSubscribe(client, SessionEventsDocument, { sessionId })
    await events.waitFor(1)
    await send(script({ say: 'streamed reply', chunks: 5 }))
    await eventually(() => events.events.some((e) => e.data?.sessionEvents.__typename === 'TurnCompleted'))
    const types = events.events.map((e) => e.data?.sessionEvents.__typename)
    expect(types.indexOf('TurnStarted')).toBeLessThan(types.indexOf('TurnCompleted'))
    const agentMessages = events.events.flatMap((e) => {
      const event = e.data?.sessionEvents
      return (event?.__typename === 'MessageAdded' || event?.__typename === 'MessageUpdated') && event.message.author === 'AGENT'
        ? [event.message]
        : []
    })
    expect(agentMessages.at(-1)?.content).toBe('streamed reply')
    events.dispose()
    await client.dispose()
  })

  it('refuses sessionEvents of another workspace’s session and focus over HTTP', async () => {
    const { sessionId } = await newSession()
    const client = await wsClient(server.wsUrl, outsider)
    const denied = wsSubscribe(client, SessionEventsDocument, { sessionId })
    expect((await denied.waitFor(1))[0]?.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    await client.dispose()
    expect(errorCodes(await http(server.graphqlUrl, token, FocusSessionDocument, { sessionId }))).toEqual(['BAD_USER_INPUT'])
  })

  it('focusSession acknowledges without replaying anything; refreshSessionGit answers without changing membership', async () => {
    const repo = gitRepo({ 'a.txt': 'a\n' })
    repo.write('a.txt', 'a\nb\n')
    const { sessionId, repositoryIds } = await newSession('with a repository', [{ name: 'acme/web', localPath: repo.dir, baseBranch: 'main' }])
    const client = await wsClient(server.wsUrl, token)
    const events = wsSubscribe(client, SessionEventsDocument, { sessionId })
    await events.waitFor(1)
    const membership = () => server.gateway.connections().map((c) => c.memberships.sessions)
    const before = membership()
    const ack = await wsExecute(client, FocusSessionDocument, { sessionId })
    expect(ack.data?.focusSession).toEqual({ sessionId, focused: true })
    const refreshed = (await wsExecute(client, RefreshSessionGitDocument, { sessionId })).data?.refreshSessionGit
    expect(refreshed).toEqual(repositoryIds.map((taskRepositoryId) => ({ taskRepositoryId })))
    expect(refreshed).toHaveLength(1)
    await wsExecute(client, ViewerDocument)
    expect(membership()).toEqual(before)
    expect(before).toContainEqual([sessionId])
    // Only live Git observations may follow: no replayed snapshot, no second join.
    expect(events.events.map((e) => e.data?.sessionEvents.__typename).filter((t) => t !== 'SessionGitUpdated')).toEqual(['SessionJoined'])
    events.dispose()
    await client.dispose()
  })

  it('GIVEN 27 tasks and one selected session, THEN no inactive session’s stream reaches the switcher connection', async () => {
    const selected = await newSession('selected')
    const noisy = await Promise.all([1, 2, 3].map((i) => newSession(`noisy ${i}`)))
    for (let i = 0; i < 23; i++) await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: `idle ${i}` } })
    const switcher = await wsClient(server.wsUrl, token)
    const feed = wsSubscribe(switcher, WorkspaceEventsDocument, { workspaceId })
    const detail = wsSubscribe(switcher, SessionEventsDocument, { sessionId: selected.sessionId })
    await detail.waitFor(1)
    await Promise.all(noisy.map((n) => n.send(script({ stream: { kind: 'message', count: 2000 } }, { tool: { title: 'Edit' } }))))
    await selected.send('hi')
    await Promise.all([...noisy, selected].map((n) => settled(n.sessionId)))
    await server.projector.idle()
    await wsExecute(switcher, ViewerDocument)
    const sessionIdsSeen = new Set(
      detail.events.map((e) => {
        const event = e.data?.sessionEvents as Record<string, { sessionId?: string; id?: string }> & { sessionId?: string }
        return event?.sessionId ?? event?.message?.sessionId ?? event?.turn?.sessionId ?? event?.session?.id
      }),
    )
    expect(sessionIdsSeen).toEqual(new Set([selected.sessionId]))
    // The workspace feed carries bounded summaries only: no message content of any session.
    const feedText = JSON.stringify(feed.events)
    expect(feedText).not.toContain('1999;')
    expect(feedText).not.toContain('echo: hi')
    expect(feed.events.map((e) => e.data?.workspaceEvents.__typename)).toContain('TaskStatusSummaryUpdated')
    feed.dispose()
    detail.dispose()
    await switcher.dispose()
  })
})
