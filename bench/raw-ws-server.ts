// The baseline server of P5 and P6: a bare `ws` WebSocketServer in a process of its own, with no
// GraphQL, no store and no scheduler. It answers just enough of graphql-transport-ws for the same
// clients to connect (connection_init → connection_ack; a subscribe is remembered) and, when told,
// writes the given frames (those the server sent for one change, in order) to every subscribed
// client: the cost of the sockets alone. By default each client's frames go out in one write (its
// socket corked around them), the least those bytes can cost; `frame` order writes each frame to
// every client in turn, one write per frame and client.
import { fork } from 'node:child_process'
import { TYPESCRIPT_EXEC_ARGV } from './runtime.ts'
import type { AddressInfo, Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { WebSocketServer, type WebSocket } from 'ws'
import { wallClock } from './clock.ts'
import { startCpuProfile, stopCpuProfile, summarizeProfile, writeSyscalls, type ProfileSummary } from './cpu-profile.ts'

/** How a change of several frames is written: all of a client's at once, or each frame to every client in turn. */
export type BroadcastOrder = 'client' | 'frame'

type Request = { id: number; op: 'broadcast'; frames: string[]; order: BroadcastOrder } | { id: number; op: 'subscribed' | 'connections' | 'heap' | 'heapReduced' | 'cpu' | 'writes' | 'profileStart' | 'profileStop' | 'stop' }
type Reply = { id: number; value: unknown }

function runServer() {
  const subscribed = new Set<WebSocket>()
  // What the real server also does per connection: no compression, the same handshake.
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
  wss.on('connection', (socket) => {
    socket.on('message', (data: Buffer) => {
      const type = (JSON.parse(data.toString('utf8')) as { type?: string }).type
      if (type === 'connection_init') socket.send('{"type":"connection_ack"}')
      else if (type === 'subscribe') subscribed.add(socket)
    })
    socket.once('close', () => subscribed.delete(socket))
  })
  // BENCH_RAW_KEEPALIVE_MS: the same keepalive the server runs (a ping each per interval, an eighth
  // of the sockets at a time; one not answered by the next is dropped), so idle CPU compares alike.
  const keepaliveMs = Number(process.env.BENCH_RAW_KEEPALIVE_MS ?? 0)
  if (keepaliveMs > 0) {
    const answered = new WeakMap<WebSocket, boolean>()
    let turn = 0
    setInterval(() => {
      let i = 0
      for (const socket of wss.clients) {
        if (i++ % 8 !== turn) continue
        if (answered.get(socket) === false) {
          socket.terminate()
          continue
        }
        if (!answered.has(socket)) socket.on('pong', () => answered.set(socket, true))
        answered.set(socket, false)
        socket.ping()
      }
      turn = (turn + 1) % 8
    }, keepaliveMs / 8).unref()
  }
  const handle = (request: Request): unknown => {
    switch (request.op) {
      case 'broadcast': {
        const { frames, order } = request
        const started = wallClock()
        if (frames.length === 1 || order === 'frame') for (const frame of frames) for (const socket of subscribed) socket.send(frame)
        else
          for (const socket of subscribed) {
            // ws has no cork of its own: its socket's (ws corks it too around a frame's header and data; corks nest).
            const stream = (socket as unknown as { _socket: Socket })._socket
            stream.cork()
            for (const frame of frames) socket.send(frame)
            stream.uncork()
          }
        return started
      }
      case 'subscribed':
        return subscribed.size
      case 'connections':
        return wss.clients.size
      case 'cpu': {
        const { user, system } = process.cpuUsage()
        return user + system
      }
      case 'writes':
        return writeSyscalls()
      case 'heap': {
        const gc = (globalThis as { gc?: () => void }).gc!
        for (let i = 0; i < 4; i++) gc()
        return process.memoryUsage().heapUsed
      }
      case 'heapReduced': {
        const gc = (globalThis as unknown as { gc: (options: object) => void }).gc
        for (let i = 0; i < 2; i++) gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
        return process.memoryUsage().heapUsed
      }
      case 'profileStart':
        return startCpuProfile().then(() => null)
      case 'profileStop':
        return stopCpuProfile().then((profile) => summarizeProfile(profile, 12))
      case 'stop':
        for (const socket of wss.clients) socket.terminate()
        wss.close()
        setImmediate(() => process.exit(0))
        return null
    }
  }
  process.on('message', (request: Request) => {
    void Promise.resolve(handle(request)).then((value) => process.send!({ id: request.id, value } satisfies Reply))
  })
  process.on('disconnect', () => process.exit(0))
  wss.on('listening', () => process.send!({ id: -1, value: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}` } satisfies Reply))
}

export interface RawWsServer {
  url: string
  /** Writes `frames` to every subscribed client (see BroadcastOrder); resolves to the wall clock taken just before. */
  broadcast(frames: string[], order?: BroadcastOrder): Promise<number>
  subscribed(): Promise<number>
  connections(): Promise<number>
  /** Heap in use after full collections. */
  heap(): Promise<number>
  /** Heap in use after memory-reducing collections. */
  heapReduced(): Promise<number>
  /** CPU time the process has used, user + system, in µs. */
  cpu(): Promise<number>
  /** Write system calls the process has made. */
  writes(): Promise<number>
  /** A CPU profile over what runs between the two: its top self-time functions and buckets. */
  profileStart(): Promise<void>
  profileStop(): Promise<ProfileSummary>
  stop(): Promise<void>
}

/** `keepaliveMs`: ping every socket once per interval, as the server does (none by default). */
export async function startRawWsServer(options: { keepaliveMs?: number } = {}): Promise<RawWsServer> {
  const env = { ...process.env, BENCH_RAW_KEEPALIVE_MS: String(options.keepaliveMs ?? 0) }
  const child = fork(fileURLToPath(import.meta.url), ['server'], { execArgv: ['--expose-gc', ...TYPESCRIPT_EXEC_ARGV], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const pending = new Map<number, (value: unknown) => void>()
  let next = 0
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`raw ws server exited with ${code}`)))
    child.on('message', (reply: Reply) => {
      if (reply.id === -1) return resolve(reply.value as string)
      pending.get(reply.id)?.(reply.value)
      pending.delete(reply.id)
    })
  })
  const ask = <T>(op: Request['op'], extra: object = {}) =>
    new Promise<T>((resolve) => {
      const id = next++
      pending.set(id, resolve as (value: unknown) => void)
      child.send({ id, op, ...extra })
    })
  return {
    url,
    broadcast: (frames, order = 'client') => ask('broadcast', { frames, order }),
    subscribed: () => ask('subscribed'),
    connections: () => ask('connections'),
    heap: () => ask('heap'),
    heapReduced: () => ask('heapReduced'),
    cpu: () => ask('cpu'),
    writes: () => ask('writes'),
    profileStart: () => ask('profileStart'),
    profileStop: () => ask('profileStop'),
    async stop() {
      if (child.connected) child.send({ id: next++, op: 'stop' })
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}

if (process.argv[2] === 'server') runServer()
