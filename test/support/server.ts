import { randomBytes } from 'node:crypto'
import os from 'node:os'
import { pino } from 'pino'
import type { DatabaseProvider } from '../../src/config/config.ts'
import { loadConfig } from '../../src/config/config.ts'
import { startServer, type RunningServer, type StartOptions } from '../../src/app/start-server.ts'
import { migratedDatabase } from './databases.ts'

export interface TestServer extends RunningServer {
  adminToken: string
  graphqlUrl: string
  wsUrl: string
  databaseUrl: string
}

/** The real server on a free loopback port, on a fresh migrated database of the provider. */
export async function startTestServer(
  provider: DatabaseProvider,
  options: StartOptions & { env?: Record<string, string>; databaseUrl?: string } = {},
): Promise<TestServer> {
  const adminToken = `admin_${randomBytes(16).toString('hex')}`
  const databaseUrl = options.databaseUrl ?? (await migratedDatabase(provider))
  // A test that counts statements counts those of its requests: the lease heartbeat (its own
  // timer, every sixth of SESSION_LEASE_MS) would add some at random, so it is made rare there.
  const lease = options.onQuery ? { SESSION_LEASE_MS: '3600000' } : {}
  const config = loadConfig({ PORT: '0', DATABASE_URL: databaseUrl, ADMIN_TOKEN: adminToken, REPOSITORY_ROOTS: os.tmpdir(), ...lease, ...options.env })
  const server = await startServer(config, {
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    skipMigrations: true,
    ...options,
  })
  return {
    ...server,
    adminToken,
    databaseUrl,
    graphqlUrl: `${server.url}/graphql`,
    wsUrl: `${server.url.replace(/^http/, 'ws')}/graphql`,
  }
}
