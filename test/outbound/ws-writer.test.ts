// The shared-frame writer against a real `ws` server and client on loopback: a member's frame is
// its own head and the cohort's body written as a list, arrives as one text frame whatever its
// length, and the shared body is handed to the TCP socket as is, never copied per subscriber.
import { once } from 'node:events'
import { afterEach, describe, expect, it } from 'vitest'
import { WebSocket, WebSocketServer } from 'ws'
import { WsWriter } from '../../src/outbound/ws-writer.ts'
import { nextFrameBody, nextFrameHead, SharedFrame } from '../../src/outbound/shared-frame.ts'

const servers: WebSocketServer[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    for (const client of server.clients) client.terminate()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** A server socket and the client that reads it; `deflate` negotiates permessage-deflate. */
async function pair(deflate = false) {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: deflate })
  servers.push(server)
  await once(server, 'listening')
  const accepted = once(server, 'connection') as Promise<[WebSocket]>
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as { port: number }).port}`, { perMessageDeflate: deflate })
  const received: { text: string; binary: boolean }[] = []
  client.on('message', (data, binary) => received.push({ text: String(data), binary }))
  await once(client, 'open')
  const [socket] = await accepted
  return { socket, received }
}

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 5000
  while (!check()) {
    if (Date.now() > deadline) throw new Error('frames did not arrive within 5 s')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe('shared frames on a real socket (ws-writer.ts)', () => {
  it.each([
    ['short (7-bit length)', 20],
    ['medium (16-bit length)', 3_000],
    ['long (64-bit length)', 100_000],
  ])('a %s frame arrives as one text frame: the member head, then the shared body', async (_name, size) => {
    const { socket, received } = await pair()
    const writes: unknown[] = []
    const tcp = (socket as unknown as { _socket: { write: (chunk: unknown, ...rest: unknown[]) => boolean } })._socket
    const write = tcp.write.bind(tcp)
    tcp.write = (chunk: unknown, ...rest: unknown[]) => (writes.push(chunk), write(chunk, ...rest))
    const out = new WsWriter(socket, { closing: () => undefined })
    const body = nextFrameBody(JSON.stringify({ data: { text: 'é"\\'.repeat(Math.ceil(size / 4)) } }))
    out.batch((writer) => {
      writer.send(new SharedFrame(nextFrameHead('a'), body))
      writer.send(new SharedFrame(nextFrameHead('b'), body))
      writer.send('{"id":"c","type":"complete"}')
    }, out)
    await until(() => received.length === 3)
    expect(received.map((r) => r.binary)).toEqual([false, false, false])
    expect(JSON.parse(received[0]!.text)).toEqual({ id: 'a', type: 'next', payload: JSON.parse(String(body).slice(0, -1)) })
    expect(JSON.parse(received[1]!.text).id).toBe('b')
    expect(received[2]!.text).toBe('{"id":"c","type":"complete"}')
    // The very Buffer every member shares went to the TCP socket, once per member: no copy.
    expect(writes.filter((chunk) => chunk === body)).toHaveLength(2)
  })

  it('with compression negotiated, a shared frame goes through ws (joined), in order with the others', async () => {
    const { socket, received } = await pair(true)
    const out = new WsWriter(socket, { closing: () => undefined })
    const body = nextFrameBody(JSON.stringify({ data: { n: 'x'.repeat(2000) } }))
    out.send('{"id":"z","type":"next","payload":{}}')
    out.send(new SharedFrame(nextFrameHead('a'), body))
    await until(() => received.length === 2)
    expect(received[0]!.text).toBe('{"id":"z","type":"next","payload":{}}')
    expect(JSON.parse(received[1]!.text)).toMatchObject({ id: 'a', type: 'next' })
  })
})
