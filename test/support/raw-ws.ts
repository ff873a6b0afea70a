import WebSocket from 'ws'
import type { Socket } from 'node:net'
import { print } from 'graphql'
import type { TypedDocumentNode } from '@graphql-typed-document-node/core'

export interface Frame {
  type: string
  id?: string
  payload?: { data?: Record<string, unknown>; errors?: unknown }
  /** Arrival order over the whole connection. */
  seq: number
}

/**
 * A graphql-transport-ws client written by hand, so a test can stop reading the socket (a slow
 * reader) and see exactly which frames arrive in which order.
 */
export async function rawGraphqlWs(url: string, token: string) {
  const socket = new WebSocket(url, 'graphql-transport-ws')
  const frames: Frame[] = []
  let seq = 0
  const listeners: (() => void)[] = []
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => {
      resolve({ code, reason: String(reason) })
      for (const l of listeners.splice(0)) l()
    }),
  )
  socket.on('message', (data) => {
    frames.push({ ...(JSON.parse(String(data)) as Omit<Frame, 'seq'>), seq: seq++ })
    for (const l of listeners.splice(0)) l()
  })
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('error', reject)
  })
  const client = {
    socket,
    frames,
    closed,
    send(message: object) {
      socket.send(JSON.stringify(message))
    },
    subscribe<R, V>(id: string, document: TypedDocumentNode<R, V>, variables: V) {
      client.send({ id, type: 'subscribe', payload: { query: print(document), variables } })
    },
    /** Stops reading from the TCP socket: the server's writes back up. */
    pauseReading() {
      ;(socket as unknown as { _socket: Socket })._socket.pause()
    },
    resumeReading() {
      ;(socket as unknown as { _socket: Socket })._socket.resume()
    },
    /**
     * Reads the TCP socket at about `bytesPerSecond` (a slow link or a busy tab): a token bucket of
     * `burstBytes`; a chunk that overdraws it pauses reading for the overdrawn bytes' worth of time.
     * No fixed per-frame delay, so small frames pass at once while the budget lasts.
     */
    throttleReading(bytesPerSecond: number, burstBytes = 16 * 1024) {
      const tcp = (socket as unknown as { _socket: Socket })._socket
      let tokens = burstBytes
      let last = performance.now()
      let resume: ReturnType<typeof setTimeout> | undefined
      tcp.on('data', (chunk: Buffer) => {
        const now = performance.now()
        tokens = Math.min(burstBytes, tokens + ((now - last) * bytesPerSecond) / 1000) - chunk.length
        last = now
        if (tokens >= 0 || resume) return
        tcp.pause()
        resume = setTimeout(() => {
          resume = undefined
          tcp.resume()
        }, (-tokens * 1000) / bytesPerSecond)
      })
      socket.once('close', () => clearTimeout(resume))
    },
    /** Resolves when a frame matches (or the socket closed). */
    async waitFor(match: (frame: Frame) => boolean): Promise<Frame | undefined> {
      for (;;) {
        const found = frames.find(match)
        if (found) return found
        if (socket.readyState === WebSocket.CLOSED) return undefined
        await new Promise<void>((resolve) => listeners.push(resolve))
      }
    },
  }
  client.send({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })
  await client.waitFor((f) => f.type === 'connection_ack')
  return client
}
