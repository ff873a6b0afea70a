// The baseline server of P5 and P6: a bare `ws` WebSocketServer in a process of its own, with no
// GraphQL, no store and no scheduler. It answers just enough of graphql-transport-ws for the same
// clients to connect (connection_init → connection_ack; a subscribe is remembered) and, when told,
// writes one given frame to every subscribed client: the cost of the sockets alone.
import { fork } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { WebSocketServer, type WebSocket } from 'ws'
import { wallClock } from './clock.ts'
import { startCpuProfile, stopCpuProfile, topSelfTime, type SelfTime } from './cpu-profile.ts'

type Request = { id: number; op: 'broadcast'; frame: string } | { id: number; op: 'subscribed' | 'connections' | 'heap' | 'cpu' | 'profileStart' | 'profileStop' | 'stop' }
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
  const handle = (request: Request): unknown => {
    switch (request.op) {
      case 'broadcast': {
        const started = wallClock()
        for (const socket of subscribed) socket.send(request.frame)
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
      case 'heap': {
        const gc = (globalThis as { gc?: () => void }).gc!
        for (let i = 0; i < 4; i++) gc()
        return process.memoryUsage().heapUsed
      }
      case 'profileStart':
        return startCpuProfile().then(() => null)
      case 'profileStop':
        return stopCpuProfile().then((profile) => topSelfTime(profile, 12))
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
  /** Writes `frame` to every subscribed client; resolves to the wall clock taken just before. */
  broadcast(frame: string): Promise<number>
  subscribed(): Promise<number>
  connections(): Promise<number>
  /** Heap in use after full collections. */
  heap(): Promise<number>
  /** CPU time the process has used, user + system, in µs. */
  cpu(): Promise<number>
  /** A CPU profile over what runs between the two: its top self-time functions. */
  profileStart(): Promise<void>
  profileStop(): Promise<SelfTime[]>
  stop(): Promise<void>
}

export async function startRawWsServer(): Promise<RawWsServer> {
  const child = fork(fileURLToPath(import.meta.url), ['server'], { execArgv: ['--expose-gc', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
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
    broadcast: (frame) => ask('broadcast', { frame }),
    subscribed: () => ask('subscribed'),
    connections: () => ask('connections'),
    heap: () => ask('heap'),
    cpu: () => ask('cpu'),
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
