import { spawn, type ChildProcess } from 'node:child_process'
import { Redis } from 'ioredis'
import { freePort } from './postgres-cluster.ts'

/** A throwaway redis-server child process on a free loopback port. */
export interface RedisServer {
  url: string
  stop(): Promise<void>
  /** How many subscribers Redis counts on a channel (to wait for a SUBSCRIBE to land). */
  subscribers(channel: string): Promise<number>
  /** Drops every pub/sub client connection, as a network blip would. */
  killPubSubClients(): Promise<void>
  /** kill -9 of redis-server: connections reset, the port refuses, whatever was published meanwhile is gone. */
  crash(): Promise<void>
  /** A new, empty redis-server on the same port, as after a crash and a supervisor's restart. */
  restart(): Promise<void>
}

function spawnRedis(port: number): { child: ChildProcess; exited: Promise<void> } {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  return { child, exited: new Promise((resolve) => child.once('exit', () => resolve())) }
}

async function connectAdmin(url: string): Promise<Redis> {
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: (n) => (n > 100 ? null : 20) })
  admin.on('error', () => undefined) // refused until redis-server listens; ioredis retries
  await admin.connect().catch(() => undefined)
  await admin.ping()
  return admin
}

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort()
  const url = `redis://127.0.0.1:${port}`
  let server = spawnRedis(port)
  let admin = await connectAdmin(url)
  return {
    url,
    async subscribers(channel) {
      const [, count] = (await admin.pubsub('NUMSUB', channel)) as [string, number]
      return Number(count)
    },
    async killPubSubClients() {
      await admin.client('KILL', 'TYPE', 'pubsub')
    },
    async crash() {
      admin.disconnect()
      server.child.kill('SIGKILL')
      await server.exited
    },
    async restart() {
      server = spawnRedis(port)
      admin = await connectAdmin(url)
    },
    async stop() {
      admin.disconnect()
      server.child.kill('SIGKILL')
    },
  }
}
