// The set-up every multi-instance suite shares: one redis-server, one migrated PostgreSQL
// database, and real server processes on both (instances.ts), as behind a load balancer.
import type { ChildProcess } from 'node:child_process'
import { afterAll, beforeAll } from 'vitest'
import { migratedDatabase } from './databases.ts'
import { killAll, startInstance, type Instance } from './instances.ts'
import { startRedisServer, type RedisServer } from './redis-server.ts'

export interface InstanceCluster<Names extends readonly string[]> {
  redis: RedisServer
  databaseUrl: string
  /** The instances named at set-up, in that order. */
  instances: { -readonly [K in keyof Names]: Instance }
  /** Another instance on the same database and Redis, with the same environment, killed with the rest. */
  start(name: string): Promise<Instance>
}

/**
 * For the enclosing describe: before its tests, a redis-server and one instance per name on a
 * fresh PostgreSQL database (`env` added to theirs); after them, every instance's process group
 * killed and redis-server stopped. The fields are set once the describe's first hooks have run,
 * so a suite's own beforeAll reads them after this call.
 */
export function instanceCluster<const Names extends readonly string[]>(names: Names, env: Record<string, string> = {}): InstanceCluster<Names> {
  const children: ChildProcess[] = []
  let shared: Record<string, string>
  const cluster = {
    start: (name: string) => startInstance(name, shared, children),
  } as InstanceCluster<Names>
  beforeAll(async () => {
    cluster.redis = await startRedisServer()
    cluster.databaseUrl = await migratedDatabase('postgres')
    shared = { DATABASE_URL: cluster.databaseUrl, REDIS_URL: cluster.redis.url, ...env }
    cluster.instances = (await Promise.all(names.map(cluster.start))) as InstanceCluster<Names>['instances']
  })
  afterAll(async () => {
    killAll(children)
    await cluster.redis?.stop()
  })
  return cluster
}
