// Two in-process servers on one fresh PostgreSQL database and one redis-server, as two instances
// behind a load balancer (the real server processes of instance-cluster.ts cost more to start).
import { migratedDatabase } from './databases.ts'
import { startRedisServer, type RedisServer } from './redis-server.ts'
import { startTestServer, type TestServer } from './server.ts'

export interface TwinServers {
  redis: RedisServer
  databaseUrl: string
  a: TestServer
  /** Shares a's admin token, so either instance accepts the same admin requests. */
  b: TestServer
  /** Closes both servers, then stops redis-server. */
  close(): Promise<void>
}

/** Starts redis-server and both servers (`env` added to each one's); on a failure half-way, stops what started. */
export async function startTwinServers(env: Record<string, string> = {}): Promise<TwinServers> {
  const redis = await startRedisServer()
  const started: TestServer[] = []
  try {
    const databaseUrl = await migratedDatabase('postgres')
    const a = await startTestServer('postgres', { databaseUrl, env: { ...env, REDIS_URL: redis.url } })
    started.push(a)
    const b = await startTestServer('postgres', { databaseUrl, env: { ...env, REDIS_URL: redis.url, ADMIN_TOKEN: a.adminToken } })
    started.push(b)
    return {
      redis,
      databaseUrl,
      a,
      b,
      async close() {
        await Promise.all([a.close(), b.close()])
        await redis.stop()
      },
    }
  } catch (error) {
    await Promise.all(started.map((s) => s.close().catch(() => undefined)))
    await redis.stop()
    throw error
  }
}
