import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createTaskClient, type TaskClient } from '../../packages/client/src/index.ts'
import { BOOT_PAGE_SIZE } from '../../packages/client/src/task-client.ts'
import { ClientBootDocument, ClientSessionMessagesDocument, ClientTasksPageDocument } from '../../packages/client/src/generated/graphql.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { http, ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { AddMessageDocument, CreateTaskDocument, RespondToPermissionDocument, StartSessionDocument, UpdateTaskDocument } from '../generated/graphql.ts'
import { randomUUID } from 'node:crypto'

interface Frame {
  type: string
  payload?: { operationName?: string; variables?: Record<string, unknown> }
}

/** Every frame the SDK's sockets sent, counted by wrapping `ws`'s send. */
const frames: Frame[] = []
class CountingWebSocket extends WebSocket {}
const send = WebSocket.prototype.send as (this: WebSocket, ...args: unknown[]) => void
CountingWebSocket.prototype.send = function (this: WebSocket, ...args: unknown[]) {
  frames.push(JSON.parse(String(args[0])) as Frame)
  return send.apply(this, args)
} as typeof WebSocket.prototype.send

const subscribes = (operationName: string) => frames.filter((f) => f.type === 'subscribe' && f.payload?.operationName === operationName)

describe('the client SDK against a listening server (sqlite)', () => {
  let server: TestServer
  let client: TaskClient
  let token: string
  let workspaceId: string
  const taskIds: string[] = []

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'sdk'))
    for (const title of ['Alpha', 'Beta']) taskIds.push((await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask.id)
    // The HTTP URL is turned into ws:// by the SDK; random 0 gives the shortest jitter (250 ms).
    client = createTaskClient({ url: server.graphqlUrl, token, webSocketImpl: CountingWebSocket, random: () => 0 })
  })
  afterAll(async () => {
    client?.dispose()
    await server?.close()
  })

  it('boots the switcher, follows a background session through the feed, joins a session once, and resumes by cursor after a 1013', async () => {
    const [alpha, beta] = taskIds as [string, string]
    const viewer = await client.viewer()
    expect(viewer.workspaces.map((w) => w.id)).toContain(workspaceId)

    // openWorkspace fills the store with every row and its summary.
    await client.openWorkspace(workspaceId)
    const booted = client.summaries.getState()
    expect(booted.status).toBe('live')
    expect(Object.keys(booted.tasks).sort()).toEqual([alpha, beta].sort())
    expect(booted.tasks[alpha]).toMatchObject({ title: 'Alpha', summary: { taskId: alpha, revision: expect.any(Number) } })
    expect(client.connection.getState().status).toBe('connected')

    // A background session (started elsewhere, never subscribed here) reaches the row through the feed.
    const revisionBefore = booted.tasks[beta]!.summary?.revision ?? 0
    const session = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: beta, prompt: 'hello' } })).startSession
    await eventually(() => {
      const row = client.summaries.getState().tasks[beta]
      return row?.summary?.primarySession?.id === session.id && row.summary.revision > revisionBefore
    })
    expect(subscribes('ClientSessionEvents')).toHaveLength(0)
    await sessionSettled(server, session.id)

    // The same visible set again (a new array, after the join, as a re-render would) sends nothing:
    // one subscribe, no complete. A round trip afterwards fences the frames it could have sent.
    client.setVisibleSessions([session.id])
    await eventually(() => client.sessions.getState().byId[session.id]?.joined)
    client.setVisibleSessions([...[session.id]])
    await client.viewer()
    expect(subscribes('ClientSessionEvents')).toHaveLength(1)
    expect(frames.filter((f) => f.type === 'complete')).toHaveLength(0)
    const transcript = client.sessions.getState().byId[session.id]!
    expect(transcript.messageIds.length).toBeGreaterThanOrEqual(2)
    expect(transcript.messages[transcript.messageIds[0]!]).toMatchObject({ author: 'USER', content: 'hello' })
    await eventually(() => client.summaries.getState().tasks[beta]?.summary?.primarySession?.state === 'WAITING_FOR_INPUT')
    await server.projector.idle()

    // The server drops every socket with 1013: the client reconnects and resumes the feed by cursor.
    const cursor = client.summaries.getState().cursor
    expect(cursor).toBeTruthy()
    const feedSubscribes = subscribes('ClientWorkspaceEvents').length
    for (const socket of server.gateway.sockets()) socket.close(1013, 'Try again later')
    await eventually(() => client.connection.getState().status === 'reconnecting')
    expect(client.connection.getState().lastCloseCode).toBe(1013)
    await eventually(() => client.connection.getState().status === 'connected' && client.connection.getState().reconnects === 1)
    await eventually(() => subscribes('ClientWorkspaceEvents').length === feedSubscribes + 1)
    expect(subscribes('ClientWorkspaceEvents').at(-1)!.payload!.variables).toEqual({ workspaceId, after: cursor })
    // The visible session is joined again with a fresh snapshot.
    await eventually(() => client.sessions.getState().byId[session.id]?.joined)
    expect(subscribes('ClientSessionEvents')).toHaveLength(2)

    // Live again: a task edit arrives as TaskUpserted; a prompt over the SDK is accepted and answered.
    await ok(server.graphqlUrl, token, UpdateTaskDocument, { id: alpha, input: { title: 'Alpha renamed' } })
    await eventually(() => client.summaries.getState().tasks[alpha]?.title === 'Alpha renamed')
    const sent = await client.sendMessage({ taskId: beta, sessionId: session.id, content: 'count' })
    expect(sent.outcome).toBe('accepted')
    if (sent.outcome === 'unknown') throw new Error('unreachable')
    expect(sent.message.id).toMatch(/^web-/)
    await eventually(() => {
      const entry = client.sessions.getState().byId[session.id]!
      const at = entry.messageIds.indexOf(sent.message.id)
      return at >= 0 && entry.messageIds.slice(at + 1).some((id) => entry.messages[id]?.author === 'AGENT')
    })

    // No boot was refetched by the reconnect.
    expect(subscribes('ClientBoot')).toHaveLength(1)

    // The SDK's heaviest reads at the sizes it sends stay within the server's cost and depth limits.
    for (const result of [
      await http(server.graphqlUrl, token, ClientBootDocument, { workspaceId, first: BOOT_PAGE_SIZE }),
      await http(server.graphqlUrl, token, ClientTasksPageDocument, { workspaceId, first: BOOT_PAGE_SIZE, after: null }),
      await http(server.graphqlUrl, token, ClientSessionMessagesDocument, { id: session.id, last: 100 }),
    ])
      expect(result.errors).toBeUndefined()

    // dispose completes everything; the server frees the connection.
    client.dispose()
    await eventually(() => server.gateway.tableSizes().connections === 0)
    expect(server.gateway.tableSizes()).toMatchObject({ subscriptions: 0, memberships: 0 })
  })

  it('follows a large streamed message by its appends (slices sharing versions) to the stored content, byte for byte, and reads a null-append message alone', async () => {
    const reader = createTaskClient({ url: server.graphqlUrl, token, webSocketImpl: CountingWebSocket, random: () => 0 })
    try {
      const taskId = taskIds[0]!
      const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
      reader.setVisibleSessions([sessionId])
      await eventually(() => reader.sessions.getState().byId[sessionId]?.joined)
      const sessionReads = subscribes('ClientSessionMessages').length
      const count = 30_000
      const script = JSON.stringify({ script: [{ stream: { kind: 'message', count } }, { tool: { title: 'done' } }, { permission: { title: 'Go on?' } }] })
      await ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: script } })
      // Answered by someone else (over HTTP): the SDK hears of it by a MessageUpdated with a null append.
      const request = await eventually(() => Object.values(reader.sessions.getState().byId[sessionId]!.messages).find((m) => m.kind === 'PERMISSION_REQUEST'))
      await ok(server.graphqlUrl, token, RespondToPermissionDocument, { sessionId, pendingId: request.pendingId!, optionId: 'allow' })
      await sessionSettled(server, sessionId)
      const streamed = Array.from({ length: count }, (_, i) => `${i};`).join('')
      await eventually(() => Object.values(reader.sessions.getState().byId[sessionId]!.messages).some((m) => m.content === streamed))
      // Every message the SDK holds is the stored one (the tool call's updates are null appends: read).
      const stored = (await http(server.graphqlUrl, token, ClientSessionMessagesDocument, { id: sessionId, last: 100 })).data!.session!.messages
      const held = () => reader.sessions.getState().byId[sessionId]!.messages
      await eventually(() => stored.every((m) => held()[m.id]?.content === m.content && held()[m.id]?.status === m.status && held()[m.id]?.version === m.version))
      // The answered request was read alone (Session.message), never the session's newest messages.
      expect(held()[request.id]!.status).toBe('APPROVED')
      expect(subscribes('ClientMessage').map((f) => f.payload?.variables)).toContainEqual({ sessionId, id: request.id })
      expect(subscribes('ClientSessionMessages')).toHaveLength(sessionReads)
      await eventually(() => (reader as unknown as { tableSizes(): Record<string, number> }).tableSizes().messageReads === 0)
    } finally {
      reader.dispose()
    }
  }, 60_000)
})
