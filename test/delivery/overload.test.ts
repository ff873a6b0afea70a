import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { print } from 'graphql'
import { ok, wsClient, wsExecute } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { DEFAULT_LIMITS } from '../../src/outbound/outbound-scheduler.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  SessionEventsDocument,
  StartSessionDocument,
  ViewerDocument,
} from '../generated/graphql.ts'
import { wholeContent } from '../../src/store/message-content.ts'

const flood = (count: number) => JSON.stringify({ script: [{ stream: { kind: 'message', count } }, { tool: { title: 'done' } }] })
const FLOOD = 120_000
/**
 * The mock streams as fast as the transport takes it, a second or so for the whole flood, and a
 * plain FIFO hands everything to the kernel, whose socket buffers hold megabytes: the same stream
 * followed this many times on the stalled connection makes a backlog larger than they absorb, so
 * the baseline really has one to queue behind. (The lanes server's send window keeps its backlog
 * in the scheduler with one follower; its semantic queue of 16 would not take twelve.)
 */
const FIFO_FOLLOWERS = 12
const limits = { ...DEFAULT_LIMITS, control: 8, semantic: 16, socketHighWater: 64 * 1024 }

describe('delivery under notification pressure (sqlite, real mock agents)', () => {
  let server: TestServer
  /** The same server with the plain FIFO of a stock graphql-ws server: proves the ordering assertion discriminates. */
  let fifoServer: TestServer
  let token: string
  const owners = new Map<TestServer, { token: string; workspaceId: string }>()

  beforeAll(async () => {
    ;[server, fifoServer] = await Promise.all([
      startTestServer('sqlite', { deliveryLimits: limits }),
      startTestServer('sqlite', { deliveryLimits: { ...limits, fifo: true } }),
    ])
    for (const on of [server, fifoServer]) owners.set(on, await userWithWorkspace(on, 'dev'))
    token = owners.get(server)!.token
  })
  afterAll(() => Promise.all([server?.close(), fifoServer?.close()]))

  async function newSession(title: string, on: TestServer = server) {
    const { token, workspaceId } = owners.get(on)!
    const taskId = (await ok(on.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask.id
    const sessionId = (await ok(on.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    return { taskId, sessionId, token }
  }
  const addMessage = (s: { taskId: string; sessionId: string }, content: string) => ({
    query: AddMessageDocument,
    variables: { input: { taskId: s.taskId, sessionId: s.sessionId, clientMessageId: randomUUID(), content } },
  })
  const settled = (sessionId: string, on: TestServer = server) => sessionSettled(on, sessionId)

  /**
   * A stalled reader subscribed to a noisy session whose whole flood, turn completion included,
   * is queued on the server; then a request of another session is answered while the reader is
   * still stalled. Returns the response and the noisy TurnCompleted in arrival order.
   */
  async function urgentRequestBehindBacklog(on: TestServer, followers = 1) {
    const noisy = await newSession('noisy', on)
    const selected = await newSession('selected', on)
    const client = await rawGraphqlWs(on.wsUrl, noisy.token)
    for (let k = 0; k < followers; k++) client.subscribe(k === 0 ? 'noisy' : `noisy-${k}`, SessionEventsDocument, { sessionId: noisy.sessionId })
    await client.waitFor((f) => f.id === (followers === 1 ? 'noisy' : `noisy-${followers - 1}`))
    client.pauseReading()
    await ok(on.graphqlUrl, noisy.token, AddMessageDocument, addMessage(noisy, flood(FLOOD)).variables)
    // The noisy turn ends on the server while its notifications are still queued for the stalled reader.
    await settled(noisy.sessionId, on)
    expect(on.gateway.connections().some((c) => c.scheduler.depth.replaceable + c.scheduler.depth.semantic > 0)).toBe(true)
    const { query, variables } = addMessage(selected, 'urgent')
    client.send({ id: 'send', type: 'subscribe', payload: { query: print(query), variables } })
    // The selected turn ends after its addMessage returned, so the response is queued by now.
    await settled(selected.sessionId, on)
    client.resumeReading()
    const response = await client.waitFor((f) => f.id === 'send' && f.type === 'next')
    const noisyDone = await client.waitFor((f) => f.id === 'noisy' && JSON.stringify(f.payload).includes('"TurnCompleted"'))
    client.socket.terminate()
    expect(response?.payload?.data).toMatchObject({ addMessage: { replayed: false, message: { content: 'urgent' } } })
    return { response: response!, noisyDone: noisyDone! }
  }

  it('GIVEN notification traffic saturates the queue, WHEN the selected session sends a message, THEN its response overtakes the queued backlog', async () => {
    const { response, noisyDone } = await urgentRequestBehindBacklog(server)
    expect(response.seq).toBeLessThan(noisyDone.seq)
  }, 120_000) // a 120,000-chunk stream through a stalled socket: generous on a loaded 2-core machine

  it('(baseline) with a plain FIFO the same response waits behind the whole backlog', async () => {
    const { response, noisyDone } = await urgentRequestBehindBacklog(fifoServer, FIFO_FOLLOWERS)
    expect(response.seq).toBeGreaterThan(noisyDone.seq)
  }, 120_000)

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
    const message = (await wholeContent(server.store, await server.store.db.message.findFirstOrThrow({ where: { sessionId: noisy.sessionId, kind: 'MESSAGE', author: 'AGENT' } })))!
    expect(maxBuffered).toBeLessThanOrEqual(limits.socketHighWater + 2 * message.content.length + 4096)
    console.info(`stalled reader: max queued frames ${maxDepth}, max socket buffer ${maxBuffered} bytes`)
    stalled.socket.terminate()
    await healthy.dispose()
  }, 120_000)
})
