import type { PrismaClient } from '../generated/sqlite/client.ts'
import type { DatabaseProvider } from '../config/config.ts'

/**
 * The Prisma client of the configured provider. Both generated clients come from the same
 * models (test/persistence/model-drift.test.ts), so the SQLite client's type describes both.
 */
export type Db = PrismaClient

export async function connectDatabase(provider: DatabaseProvider, url: string): Promise<Db> {
  if (provider === 'sqlite') {
    const [{ PrismaClient: SqliteClient }, { PrismaBetterSQLite3 }] = await Promise.all([
      import('../generated/sqlite/client.ts'),
      import('@prisma/adapter-better-sqlite3'),
    ])
    const db = new SqliteClient({ adapter: new PrismaBetterSQLite3({ url }) })
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
  const db = new PgClient({ adapter: new PrismaPg({ connectionString: url, max: 10 }) })
  await db.$connect()
  return db as unknown as Db
}
