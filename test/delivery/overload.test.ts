import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { eventually } from '../support/wait.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { DEFAULT_LIMITS } from '../../src/delivery/outbound-scheduler.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  SessionEventsDocument,
  StartSessionDocument,
  ViewerDocument,
} from '../generated/graphql.ts'

const flood = (count: number) => JSON.stringify({ script: [{ stream: { kind: 'message', count } }, { tool: { title: 'done' } }] })
const FLOOD = 120_000
const limits = { ...DEFAULT_LIMITS, control: 8, semantic: 16, socketHighWater: 64 * 1024 }

describe('delivery under notification pressure (sqlite, real mock agents)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite', { deliveryLimits: limits })
    const owner = await userWithWorkspace(server, 'dev')
    token = owner.token
    workspaceId = owner.workspaceId
  })
  afterAll(() => server?.close())

  async function newSession(title: string) {
    const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask.id
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    return { taskId, sessionId }
  }
  const addMessage = (s: { taskId: string; sessionId: string }, content: string) => ({
    query: AddMessageDocument,
    variables: { input: { taskId: s.taskId, sessionId: s.sessionId, clientMessageId: randomUUID(), content } },
  })
  const settled = (sessionId: string) => sessionSettled(server, sessionId)

  it('GIVEN notification traffic saturates the queue, WHEN the selected session sends a message, THEN its response comes first or the connection closes with 1013', async () => {
    const noisy = await newSession('noisy')
    const selected = await newSession('selected')
    const client = await rawGraphqlWs(server.wsUrl, token)
    client.subscribe('noisy', SessionEventsDocument, { sessionId: noisy.sessionId })
    await client.waitFor((f) => f.id === 'noisy')
    client.pauseReading()
    await ok(server.graphqlUrl, token, AddMessageDocument, addMessage(noisy, flood(FLOOD)).variables)
    // The server's socket backs up: its queues are full of this session's notifications.
    await eventually(() => server.gateway.connections().some((c) => c.scheduler.depth.replaceable + c.scheduler.depth.semantic > 0))
    const { query, variables } = addMessage(selected, 'urgent')
    client.send({ id: 'send', type: 'subscribe', payload: { query: (await import('graphql')).print(query), variables } })
    await new Promise((r) => setTimeout(r, 200)) // let the request be handled while the reader is stalled
    client.resumeReading()
    const response = await client.waitFor((f) => f.id === 'send' && f.type === 'next')
    if (!response) {
      expect((await client.closed).code).toBe(1013)
    } else {
      expect(response.payload?.data).toMatchObject({ addMessage: { replayed: false, message: { content: 'urgent' } } })
      // The response did not wait for the noisy backlog: the noisy turn was still streaming behind it.
      const noisyDone = await client.waitFor((f) => f.id === 'noisy' && JSON.stringify(f.payload).includes('"TurnCompleted"'))
      expect(noisyDone?.seq).toBeGreaterThan(response.seq)
    }
    client.socket.terminate()
    await settled(noisy.sessionId)
  }, 120_000) // a 120,000-chunk stream through a stalled socket: generous on a loaded 2-core machine

  it('keeps server memory for a reader that stops reading bounded, and other clients unaffected', async () => {
    const noisy = await newSession('noisy 2')
    const stalled = await rawGraphqlWs(server.wsUrl, token)
    stalled.subscribe('noisy', SessionEventsDocument, { sessionId: noisy.sessionId })
    await stalled.waitFor((f) => f.id === 'noisy')
    stalled.pauseReading()
    const healthy = await wsClient(server.wsUrl, token)
    await ok(server.graphqlUrl, token, AddMessageDocument, addMessage(noisy, flood(FLOOD)).variables)
    let maxDepth = 0
    let maxBuffered = 0
    while ((await server.store.db.session.findUniqueOrThrow({ where: { id: noisy.sessionId } })).state === 'RUNNING') {
      for (const c of server.gateway.connections()) {
        const d = c.scheduler.depth
        maxDepth = Math.max(maxDepth, d.control + d.semantic + d.replaceable)
      }
      for (const socket of server.gateway.sockets()) maxBuffered = Math.max(maxBuffered, socket.bufferedAmount)
      // Another client's request is answered while the stalled one backs up.
      expect((await wsExecute(healthy, ViewerDocument)).data?.viewer.user.name).toBe('dev')
      await new Promise((r) => setTimeout(r, 20))
    }
    await settled(noisy.sessionId)
    expect(maxDepth).toBeLessThanOrEqual(limits.control + limits.semantic + limits.replaceablePerConnection + limits.replaceablePerSession)
    // What ws holds beyond the high-water mark is at most one frame (a MessageUpdated carries the whole message).
    const message = await server.store.db.message.findFirstOrThrow({ where: { sessionId: noisy.sessionId, kind: 'MESSAGE', author: 'AGENT' } })
    expect(maxBuffered).toBeLessThanOrEqual(limits.socketHighWater + 2 * message.content.length + 4096)
    console.info(`stalled reader: max queued frames ${maxDepth}, max socket buffer ${maxBuffered} bytes`)
    stalled.socket.terminate()
    await healthy.dispose()
  }, 120_000)
})
