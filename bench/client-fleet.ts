// Many WebSocket clients spread over a few worker processes, so the process under measure (the
// server, or a raw ws baseline) shares no event loop with them. Every client is the same kind in
// every run: a hand-written graphql-transport-ws client (far cheaper per connection than
// graphql-ws's createClient, so a few workers can hold 10,000 of them) that always uses the
// subscription id "1". A worker timestamps each frame on arrival with the machine's wall clock, so
// the parent can compare it with the trigger time another process took. A change may arrive as
// more than one frame (a task edit: TaskUpserted, then its summary): a client's arrival is that of
// the change's last frame. Clients bind to several loopback addresses (127.0.0.2, 127.0.0.3, …),
// so 20,000 connections to one port never run out of one address's ephemeral ports.
import { fork, type ChildProcess } from 'node:child_process'
import { TYPESCRIPT_EXEC_ARGV } from './runtime.ts'
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
  | { op: 'open'; url: string; count: number; handshake: Handshake; concurrency: number; localAddresses: string[] }
  | { op: 'arm' }
  | { op: 'collect'; timeoutMs: number; frames: number }
  | { op: 'closeAll' }
type Message = Request & { id: number }
type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string }

export interface Opened {
  opened: number
  failed: number
}

/** One round of deliveries (one change, of `frames` frames to every client). */
export interface Arrivals {
  /** When each client that got every frame of the change got its last. */
  times: number[]
  /** For each of those clients, the time from its first frame of the change to its last. */
  spreads: number[]
  /** The earliest arrival of any frame of the round at any client (absent: none arrived). */
  first?: number
  /** Clients that got fewer frames than the change has. */
  missing: number
  /** Clients that got more (a miscount, or a frame the change did not make). */
  extra: number
  /** Every frame of the round as one client got it, in order. */
  sample: string[]
  /** Whether the workers' sampled clients got different bytes (each worker samples one client). */
  samplesDiffer?: boolean
}

/** Loopback addresses clients bind to: 127.0.0.2 onwards (the server listens on 127.0.0.1). */
export function loopbackAddresses(count: number): string[] {
  if (count < 1 || count > 250) throw new Error(`between 1 and 250 loopback addresses, not ${count}`)
  return Array.from({ length: count }, (_, i) => `127.0.0.${i + 2}`)
}

// --- worker side ---

function runWorker() {
  interface Client {
    socket: WebSocket
    /** The round its arrivals are of. */
    round: number
    arrivals: number[]
  }
  const clients: Client[] = []
  /** The current round; 0 while disarmed. Rounds are numbered on, never reused. */
  let round = 0
  let rounds = 0
  /** Frames of the round's change, once collect says (until then no client's round is complete). */
  let expected = Infinity
  let complete = 0
  let first = Infinity
  /** The round's first client to get a frame: every frame it gets is kept as sent. */
  let sampled: Client | undefined
  let sample: string[] = []
  let done: (() => void) | undefined

  const openOne = (url: string, handshake: Handshake, localAddress: string) =>
    new Promise<boolean>((resolve) => {
      const protocol = handshake.kind === 'none' ? undefined : 'graphql-transport-ws'
      const socket = new WebSocket(url, protocol, { perMessageDeflate: false, localAddress })
      const client: Client = { socket, round: 0, arrivals: [] }
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
        if (round === 0) return // not armed
        if (client.round !== round) {
          client.round = round
          client.arrivals.length = 0
          if (at < first) first = at
          sampled ??= client
        }
        client.arrivals.push(at)
        if (client === sampled) sample.push(data.toString('utf8'))
        if (client.arrivals.length === expected && ++complete === clients.length) done?.()
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
            const localAddress = request.localAddresses[next % request.localAddresses.length]!
            next++
            if (await openOne(request.url, request.handshake, localAddress)) opened++
            else failed++
          }
        }
        await Promise.all(Array.from({ length: Math.min(request.concurrency, request.count) }, lane))
        return { opened, failed } satisfies Opened
      }
      case 'arm':
        round = ++rounds
        expected = Infinity
        complete = 0
        first = Infinity
        sampled = undefined
        sample = []
        return null
      case 'collect': {
        expected = request.frames
        const got = (c: Client) => (c.round === round ? c.arrivals.length : 0)
        complete = clients.filter((c) => got(c) >= expected).length
        if (complete < clients.length) {
          let timer: NodeJS.Timeout | undefined
          await new Promise<void>((resolve) => {
            done = resolve
            timer = setTimeout(resolve, request.timeoutMs)
          })
          clearTimeout(timer)
          done = undefined
        }
        const completed = clients.filter((c) => got(c) >= expected)
        const times = completed.map((c) => c.arrivals[expected - 1]!)
        const spreads = completed.map((c) => c.arrivals[expected - 1]! - c.arrivals[0]!)
        // (IPC carries JSON: an Infinity would arrive as null.)
        const result: Arrivals = { times, spreads, ...(first !== Infinity && { first }), missing: clients.length - times.length, extra: clients.filter((c) => got(c) > expected).length, sample }
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
  /** Opens `count` clients, spread evenly over the workers, each worker's over the loopback addresses. */
  open(url: string, count: number, handshake: Handshake): Promise<Opened>
  /** Starts a round: from now on each client records the arrival of every frame. */
  arm(): Promise<void>
  /** The round's arrivals, once every client has the change's `frames` frames or `timeoutMs` passed. */
  collect(timeoutMs: number, frames: number): Promise<Arrivals>
  closeAll(): Promise<void>
  stop(): void
}

/** `localAddresses`: how many loopback addresses the clients bind to (127.0.0.2 onwards). */
export function startClientFleet(workers: number, localAddresses = 1): ClientFleet {
  const addresses = loopbackAddresses(localAddresses)
  const children: ChildProcess[] = []
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  let next = 0
  for (let i = 0; i < workers; i++) {
    const child = fork(fileURLToPath(import.meta.url), ['worker'], { execArgv: [...TYPESCRIPT_EXEC_ARGV], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
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
      // Worker i starts at the i-th address, so the addresses' shares stay even whatever the count.
      const rotated = (i: number) => [...addresses.slice(i % addresses.length), ...addresses.slice(0, i % addresses.length)]
      const results = await all<Opened>((i) => ({ op: 'open', url, count: shares[i]!, handshake, concurrency: 64, localAddresses: rotated(i) }))
      return { opened: results.reduce((n, r) => n + r.opened, 0), failed: results.reduce((n, r) => n + r.failed, 0) }
    },
    arm: async () => void (await all(() => ({ op: 'arm' }))),
    async collect(timeoutMs, frames) {
      const results = await all<Arrivals>(() => ({ op: 'collect', timeoutMs, frames }))
      const sampled = results.filter((r) => r.sample.length > 0).map((r) => JSON.stringify(r.sample))
      const firsts = results.flatMap((r) => (r.first === undefined ? [] : [r.first]))
      return {
        times: results.flatMap((r) => r.times),
        spreads: results.flatMap((r) => r.spreads),
        ...(firsts.length > 0 && { first: Math.min(...firsts) }),
        missing: results.reduce((n, r) => n + r.missing, 0),
        extra: results.reduce((n, r) => n + r.extra, 0),
        sample: results.find((r) => r.sample.length > 0)?.sample ?? [],
        samplesDiffer: new Set(sampled).size > 1,
      }
    },
    closeAll: async () => void (await all(() => ({ op: 'closeAll' }))),
    stop() {
      for (const child of children) if (child.connected) child.disconnect()
    },
  }
}

if (process.argv[2] === 'worker') runWorker()
