import { once } from 'node:events'
import type { Socket } from 'node:net'
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { capturedLogger, type LogLine as BaseLogLine } from '../support/captured-logger.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { manualTimers } from '../support/manual-timers.ts'
import { eventually } from '../support/wait.ts'
import { DEFAULT_LIMITS } from '../../src/outbound/outbound-scheduler.ts'
import { OPERATION_LIMITS } from '../../src/contract/operation-limits.ts'

type LogLine = BaseLogLine & { client?: string; code?: number; reason?: string }


/** A WebSocket on /graphql speaking graphql-transport-ws by hand, so it can misbehave. */
async function rawSocket(url: string, options: { protocol?: string | null; autoPong?: boolean } = {}) {
  const protocol = options.protocol === undefined ? 'graphql-transport-ws' : options.protocol
  const socket = new WebSocket(url, protocol ? [protocol] : [], { autoPong: options.autoPong ?? true })
  const messages: { type: string; id?: string }[] = []
  socket.on('message', (data) => messages.push(JSON.parse(String(data)) as { type: string }))
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })))
  await once(socket, 'open')
  const send = (message: object | string) => socket.send(typeof message === 'string' ? message : JSON.stringify(message))
  const waitFor = (type: string) => eventually(() => messages.find((m) => m.type === type))
  return {
    socket,
    closed,
    send,
    messages,
    async init(token: string) {
      send({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })
      await waitFor('connection_ack')
    },
    /** A graphql-ws ping answered: the server has read everything sent before it, pong frames included. */
    async roundTrip() {
      const before = messages.filter((m) => m.type === 'pong').length
      send({ type: 'ping' })
      await eventually(() => messages.filter((m) => m.type === 'pong').length > before)
    },
  }
}

/** websocket_server_closes_total{code,reason} from /metrics. */
async function closesCounted(server: TestServer, code: string, reason: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`websocket_server_closes_total{code="${code}",reason="${reason}"}`))
  return line ? Number(line.split(' ').pop()) : 0
}

const closeLines = (lines: LogLine[]) => lines.filter((l) => l.action === 'ws.server-close')

describe('every close the server decides is logged once and counted (sqlite, real sockets)', () => {
  const main = capturedLogger<LogLine>()
  const stalled = capturedLogger<LogLine>()
  const overflow = capturedLogger<LogLine>()
  const clock = manualTimers()
  const KEEPALIVE_MS = 12_000
  let server: TestServer
  let keepaliveServer: TestServer
  let overflowServer: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    ;[server, keepaliveServer, overflowServer] = await Promise.all([
      startTestServer('sqlite', { logger: main.logger, websocket: { connectionInitWaitTimeoutMs: 1000 } }),
      startTestServer('sqlite', { logger: stalled.logger, websocket: { keepalive: { intervalMs: KEEPALIVE_MS, timers: clock.timers } } }),
      // Nothing is ever written (high water 0), so two control frames fill the control queue.
      startTestServer('sqlite', { logger: overflow.logger, deliveryLimits: { ...DEFAULT_LIMITS, control: 2, socketHighWater: 0 } }),
    ])
    ;({ token, workspaceId } = await userWithWorkspace(server, 'closes'))
  })
  afterAll(() => Promise.all([server?.close(), keepaliveServer?.close(), overflowServer?.close()]))

  /**
   * Runs `act` and expects exactly one close line with this code and reason, naming a client, and
   * the counter one higher; returns the line.
   */
  async function expectOneClose(on: TestServer, log: ReturnType<typeof capturedLogger>, code: number, reason: string, act: () => Promise<unknown>) {
    const counted = await closesCounted(on, String(code), reason)
    const seen = closeLines(log.lines).length
    await act()
    const added = closeLines(log.lines).slice(seen)
    expect(added).toEqual([expect.objectContaining({ code, reason, client: expect.stringMatching(/^[0-9a-f-]{36}$/), address: '127.0.0.1' })])
    expect(await closesCounted(on, String(code), reason)).toBe(counted + 1)
    return added[0]!
  }

  it('4400 for a message that is not graphql-transport-ws', async () => {
    const client = await rawSocket(server.wsUrl)
    await expectOneClose(server, main, 4400, 'bad_message', async () => {
      client.send({ type: 'made-up' })
      expect((await client.closed).code).toBe(4400)
    })
  })

  it('4401 for a subscribe before connection_init', async () => {
    const client = await rawSocket(server.wsUrl)
    await expectOneClose(server, main, 4401, 'unauthorized', async () => {
      client.send({ id: '1', type: 'subscribe', payload: { query: '{ __typename }' } })
      expect((await client.closed).code).toBe(4401)
    })
  })

  it('4403 for an unknown token, naming why and not the token', async () => {
    const client = await rawSocket(server.wsUrl)
    const line = await expectOneClose(server, main, 4403, 'forbidden', async () => {
      client.send({ type: 'connection_init', payload: { authorization: 'Bearer not-a-real-token-4403' } })
      expect((await client.closed).code).toBe(4403)
    })
    expect(line.refusal).toBe('unknown token')
    expect(main.raw.join('')).not.toContain('not-a-real-token-4403')
  })

  it('4408 when connection_init does not come in time', async () => {
    const client = await rawSocket(server.wsUrl)
    await expectOneClose(server, main, 4408, 'init_timeout', async () => expect((await client.closed).code).toBe(4408))
  })

  it('4409 for a second subscription under an id in use, without logging the id', async () => {
    const client = await rawSocket(server.wsUrl)
    await client.init(token)
    const workspaces = `subscription { workspaceEvents(workspaceId: "${workspaceId}") { __typename } }`
    await expectOneClose(server, main, 4409, 'subscriber_exists', async () => {
      // The first stays open (the feed has no event yet), so the id is taken when the second comes.
      client.send({ id: 'op-id-chosen-by-client', type: 'subscribe', payload: { query: workspaces } })
      client.send({ id: 'op-id-chosen-by-client', type: 'subscribe', payload: { query: workspaces } })
      expect((await client.closed).code).toBe(4409)
    })
    expect(main.raw.join('')).not.toContain('op-id-chosen-by-client')
  })

  it('4409 for a subscribe under the id of a feed subscription that has started (one the gateway runs itself)', async () => {
    const client = await rawSocket(server.wsUrl)
    await client.init(token)
    const workspaces = `subscription { workspaceEvents(workspaceId: "${workspaceId}") { __typename } }`
    client.send({ id: 'feed', type: 'subscribe', payload: { query: workspaces } })
    await eventually(() => server.gateway.connections().some((c) => c.members?.has('feed')))
    await expectOneClose(server, main, 4409, 'subscriber_exists', async () => {
      client.send({ id: 'feed', type: 'subscribe', payload: { query: workspaces } })
      expect((await client.closed).code).toBe(4409)
    })
  })

  it('4429 for a second connection_init', async () => {
    const client = await rawSocket(server.wsUrl)
    await client.init(token)
    await expectOneClose(server, main, 4429, 'too_many_init_requests', async () => {
      client.send({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })
      expect((await client.closed).code).toBe(4429)
    })
    expect(main.raw.join('')).not.toContain(token)
  })

  it('4406 for a socket without the graphql-transport-ws subprotocol', async () => {
    await expectOneClose(server, main, 4406, 'subprotocol_not_acceptable', async () => {
      const client = await rawSocket(server.wsUrl, { protocol: null })
      expect((await client.closed).code).toBe(4406)
    })
  })

  it('1009 for a frame over the size limit, without logging any of it', async () => {
    const client = await rawSocket(server.wsUrl)
    await client.init(token)
    const line = await expectOneClose(server, main, 1009, 'message_too_big', async () => {
      client.send(`{"type":"subscribe","id":"big","payload":{"query":"${'q'.repeat(OPERATION_LIMITS.maxRequestBodyBytes)}"}}`)
      expect((await client.closed).code).toBe(1009)
    })
    expect(line.wsError).toBe('WS_ERR_UNSUPPORTED_MESSAGE_LENGTH')
    expect(main.raw.join('')).not.toContain('qqqq')
  })

  it('1002 for a frame breaking the WebSocket protocol (reserved opcode)', async () => {
    const client = await rawSocket(server.wsUrl)
    await expectOneClose(server, main, 1002, 'protocol_error', async () => {
      // FIN + opcode 3 (reserved), masked, empty: written under ws, which would never send it.
      ;(client.socket as unknown as { _socket: Socket })._socket.write(Buffer.from([0x83, 0x80, 0, 0, 0, 0]))
      await client.closed
    })
  })

  it('counts and logs nothing when the client closes', async () => {
    const client = await rawSocket(server.wsUrl)
    await client.init(token)
    const seen = closeLines(main.lines).length
    client.socket.close(1000, 'bye')
    await client.closed
    await eventually(() => server.gateway.connections().length === 0)
    expect(closeLines(main.lines).length).toBe(seen)
    expect(await fetch(`${server.url}/metrics`).then((r) => r.text())).not.toMatch(/websocket_server_closes_total\{code="1000"/)
  })

  it('drops a client that stops answering pings after the next keepalive tick, with 1006', async () => {
    const reader = await rawSocket(keepaliveServer.wsUrl, { autoPong: false })
    const healthy = await rawSocket(keepaliveServer.wsUrl)
    const { token: keepaliveToken } = await userWithWorkspace(keepaliveServer, 'keepalive')
    await Promise.all([reader.init(keepaliveToken), healthy.init(keepaliveToken)])
    const pinged = Promise.all([once(reader.socket, 'ping'), once(healthy.socket, 'ping')])
    clock.advance(KEEPALIVE_MS)
    await pinged
    await healthy.roundTrip()
    expect(closeLines(stalled.lines)).toEqual([])

    const line = await expectOneClose(keepaliveServer, stalled, 1006, 'keepalive_timeout', async () => {
      clock.advance(KEEPALIVE_MS)
      expect((await reader.closed).code).toBe(1006)
    })
    expect(line.level).toBe(40) // warn
    // The client that answered stays: the same tick pinged it again.
    await healthy.roundTrip()
    expect(healthy.socket.readyState).toBe(WebSocket.OPEN)
    healthy.socket.close()
  })

  it('1013 when the outbound queue overflows, with the queue class', async () => {
    const { token: overflowToken } = await userWithWorkspace(overflowServer, 'overflow')
    const client = await rawSocket(overflowServer.wsUrl)
    const line = await expectOneClose(overflowServer, overflow, 1013, 'queue_overflow', async () => {
      client.send({ type: 'connection_init', payload: { authorization: `Bearer ${overflowToken}` } })
      // The ack is queued, never written: the server's side of the handshake shows the connection accepted.
      await eventually(() => overflowServer.gateway.connections().some((c) => c.access.principal))
      for (let i = 0; i < 3; i++) client.send({ id: `q${i}`, type: 'subscribe', payload: { query: '{ __typename }' } })
      expect((await client.closed).code).toBe(1013)
    })
    expect(line.queueClass).toBe('control')
    const metrics = await fetch(`${overflowServer.url}/metrics`).then((r) => r.text())
    expect(metrics).toMatch(/delivery_overflow_closes_total\{class="control"\} 1/)
  })

  // Last: it closes the main server's WebSocket endpoint.
  it('1001 for every open socket at shutdown', async () => {
    const client = await rawSocket(server.wsUrl)
    await client.init(token)
    const line = await expectOneClose(server, main, 1001, 'going_away', async () => {
      await server.gateway.close()
      expect((await client.closed).code).toBe(1001)
    })
    expect(line.level).toBe(30) // info: a shutdown is no client's fault
  })
})
