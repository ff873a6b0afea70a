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
}

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort()
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  )
  const url = `redis://127.0.0.1:${port}`
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: (n) => (n > 100 ? null : 20) })
  admin.on('error', () => undefined) // refused until redis-server listens; ioredis retries
  await admin.connect().catch(() => undefined)
  await admin.ping()
  return {
    url,
    async subscribers(channel) {
      const [, count] = (await admin.pubsub('NUMSUB', channel)) as [string, number]
      return Number(count)
    },
    async killPubSubClients() {
      await admin.client('KILL', 'TYPE', 'pubsub')
    },
    async stop() {
      admin.disconnect()
      child.kill('SIGKILL')
    },
  }
}
