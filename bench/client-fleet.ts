// Many WebSocket clients spread over a few worker processes, so the process under measure (the
// server, or a raw ws baseline) shares no event loop with them. Every client is the same kind in
// every run: a hand-written graphql-transport-ws client (far cheaper per connection than
// graphql-ws's createClient, so a few workers can hold 10,000 of them) that always uses the
// subscription id "1". A worker timestamps each frame on arrival with the machine's wall clock, so
// the parent can compare it with the trigger time another process took.
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { wallClock } from './clock.ts'

/** How far a client goes after the socket opens. */
export type Handshake =
  /** A plain WebSocket, nothing sent (a baseline against a server without GraphQL). */
  | { kind: 'none' }
  /** connection_init answered by connection_ack. */
  | { kind: 'ack'; token: string }
  /** …then one subscription, id "1". */
  | { kind: 'subscribe'; token: string; payload: { query: string; variables?: Record<string, unknown> } }

export const SUBSCRIPTION_ID = '1'

type Request =
  | { op: 'open'; url: string; count: number; handshake: Handshake; concurrency: number }
  | { op: 'arm' }
  | { op: 'collect'; timeoutMs: number }
  | { op: 'closeAll' }
type Message = Request & { id: number }
type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string }

export interface Opened {
  opened: number
  failed: number
}

/** One round of deliveries: when each client got its frame, who got none, and one frame as sent. */
export interface Arrivals {
  times: number[]
  missing: number
  sample?: string
}

// --- worker side ---

function runWorker() {
  const clients: { socket: WebSocket; round: number }[] = []
  /** The current round; 0 while disarmed. Rounds are numbered on, never reused. */
  let round = 0
  let rounds = 0
  let times: number[] = []
  let sample: string | undefined
  let complete: (() => void) | undefined

  const openOne = (url: string, handshake: Handshake) =>
    new Promise<boolean>((resolve) => {
      const protocol = handshake.kind === 'none' ? undefined : 'graphql-transport-ws'
      const socket = new WebSocket(url, protocol, { perMessageDeflate: false })
      const client = { socket, round: 0 }
      let settled = false
      const settle = (ok: boolean) => {
        if (settled) return
        settled = true
        if (ok) clients.push(client)
        else socket.terminate()
        resolve(ok)
      }
      socket.once('error', () => settle(false))
      socket.once('close', () => settle(false))
      socket.once('open', () => {
        if (handshake.kind === 'none') return settle(true)
        socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${handshake.token}` } }))
      })
      socket.on('message', (data: Buffer) => {
        const at = wallClock() // first: the arrival, before any work of this client
        if (!settled) {
          if (!data.toString('utf8', 0, 40).includes('"connection_ack"')) return settle(false)
          if (handshake.kind === 'subscribe') socket.send(JSON.stringify({ id: SUBSCRIPTION_ID, type: 'subscribe', payload: handshake.payload }))
          return settle(true)
        }
        if (round === 0 || client.round === round) return // not armed, or a second frame in the round
        client.round = round
        times.push(at)
        sample ??= data.toString('utf8')
        if (times.length === clients.length) complete?.()
      })
    })

  const handle = async (request: Request): Promise<unknown> => {
    switch (request.op) {
      case 'open': {
        let opened = 0
        let failed = 0
        let next = 0
        const lane = async () => {
          while (next < request.count) {
            next++
            if (await openOne(request.url, request.handshake)) opened++
            else failed++
          }
        }
        await Promise.all(Array.from({ length: Math.min(request.concurrency, request.count) }, lane))
        return { opened, failed } satisfies Opened
      }
      case 'arm':
        round = ++rounds
        times = []
        sample = undefined
        return null
      case 'collect': {
        if (times.length < clients.length) {
          let timer: NodeJS.Timeout | undefined
          await new Promise<void>((resolve) => {
            complete = resolve
            timer = setTimeout(resolve, request.timeoutMs)
          })
          clearTimeout(timer)
          complete = undefined
        }
        const result: Arrivals = { times, missing: clients.length - times.length, sample }
        round = 0 // disarmed until the next round
        return result
      }
      case 'closeAll': {
        const closing = clients.splice(0).map(
          ({ socket }) =>
            new Promise<void>((resolve) => {
              if (socket.readyState === WebSocket.CLOSED) return resolve()
              socket.once('close', () => resolve())
              socket.close()
              // A server that does not answer the close does not hold us: the socket is dropped.
              setTimeout(() => (socket.terminate(), resolve()), 5_000).unref()
            }),
        )
        await Promise.all(closing)
        return null
      }
    }
  }

  process.on('message', (message: Message) => {
    handle(message).then(
      (value) => process.send!({ id: message.id, ok: true, value } satisfies Reply),
      (error: unknown) => process.send!({ id: message.id, ok: false, error: String(error) } satisfies Reply),
    )
  })
  process.on('disconnect', () => process.exit(0))
}

// --- parent side ---

export interface ClientFleet {
  /** Opens `count` clients, spread evenly over the workers. */
  open(url: string, count: number, handshake: Handshake): Promise<Opened>
  /** Starts a round: from now on each client records the arrival of its next frame. */
  arm(): Promise<void>
  /** The round's arrivals, once every client has one or `timeoutMs` passed. */
  collect(timeoutMs: number): Promise<Arrivals>
  closeAll(): Promise<void>
  stop(): void
}

export function startClientFleet(workers: number): ClientFleet {
  const children: ChildProcess[] = []
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  let next = 0
  for (let i = 0; i < workers; i++) {
    const child = fork(fileURLToPath(import.meta.url), ['worker'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    child.on('message', (reply: Reply) => {
      const waiter = pending.get(reply.id)
      pending.delete(reply.id)
      if (reply.ok) waiter?.resolve(reply.value)
      else waiter?.reject(new Error(reply.error))
    })
    child.once('exit', (code) => {
      for (const waiter of pending.values()) waiter.reject(new Error(`client worker exited with ${code}`))
      pending.clear()
    })
    children.push(child)
  }
  const ask = <T>(child: ChildProcess, request: Request) =>
    new Promise<T>((resolve, reject) => {
      const id = next++
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
      child.send({ ...request, id } satisfies Message)
    })
  const all = <T>(request: (i: number) => Request) => Promise.all(children.map((child, i) => ask<T>(child, request(i))))

  return {
    async open(url, count, handshake) {
      const shares = children.map((_, i) => Math.floor(count / workers) + (i < count % workers ? 1 : 0))
      // Bounded handshakes in flight per worker: a burst of 10,000 would only measure the accept queue.
      const results = await all<Opened>((i) => ({ op: 'open', url, count: shares[i]!, handshake, concurrency: 64 }))
      return { opened: results.reduce((n, r) => n + r.opened, 0), failed: results.reduce((n, r) => n + r.failed, 0) }
    },
    arm: async () => void (await all(() => ({ op: 'arm' }))),
    async collect(timeoutMs) {
      const results = await all<Arrivals>(() => ({ op: 'collect', timeoutMs }))
      return { times: results.flatMap((r) => r.times), missing: results.reduce((n, r) => n + r.missing, 0), sample: results.find((r) => r.sample)?.sample }
    },
    closeAll: async () => void (await all(() => ({ op: 'closeAll' }))),
    stop() {
      for (const child of children) if (child.connected) child.disconnect()
    },
  }
}

if (process.argv[2] === 'worker') runWorker()
