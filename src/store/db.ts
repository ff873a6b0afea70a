import type { PrismaClient } from '../generated/sqlite/client.ts'
import type { DatabaseProvider } from '../config/config.ts'

/**
 * The Prisma client of the configured provider. Both generated clients come from the same
 * models (test/persistence/model-drift.test.ts), so the SQLite client's type describes both.
 */
export type Db = PrismaClient

export interface ConnectOptions {
  /** Called with every SQL statement Prisma sends (used to prove read paths do not N+1). */
  onQuery?: (sql: string) => void
}

export async function connectDatabase(provider: DatabaseProvider, url: string, options: ConnectOptions = {}): Promise<Db> {
  const log = options.onQuery ? [{ emit: 'event' as const, level: 'query' as const }] : []
  if (provider === 'sqlite') {
    const [{ PrismaClient: SqliteClient }, { PrismaBetterSQLite3 }] = await Promise.all([
      import('../generated/sqlite/client.ts'),
      import('@prisma/adapter-better-sqlite3'),
    ])
    const db = new SqliteClient({ adapter: new PrismaBetterSQLite3({ url }), log })
    if (options.onQuery) db.$on('query' as never, (e: { query: string }) => options.onQuery!(e.query))
    // WAL lets readers proceed during a write; the busy timeout turns lock contention into waiting, not errors.
    await db.$queryRawUnsafe('PRAGMA journal_mode = WAL')
    await db.$executeRawUnsafe('PRAGMA busy_timeout = 5000')
    await db.$executeRawUnsafe('PRAGMA foreign_keys = ON')
    return db
  }
  const [{ PrismaClient: PgClient }, { PrismaPg }] = await Promise.all([
    import('../generated/postgres/client.ts'),
    import('@prisma/adapter-pg'),
  ])
  const db = new PgClient({ adapter: new PrismaPg({ connectionString: url, max: 10, connectionTimeoutMillis: 10_000 }), log })
  if (options.onQuery) db.$on('query' as never, (e: { query: string }) => options.onQuery!(e.query))
  await db.$connect()
  return db as unknown as Db
}
