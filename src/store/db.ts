import type { PrismaClient } from '../generated/sqlite/client.ts'
import type { DatabaseProvider } from '../config/config.ts'

/**
 * The Prisma client of the configured provider. Both generated clients come from the same
 * models (test/persistence/model-drift.test.ts), so the SQLite client's type describes both.
 */
export type Db = PrismaClient

/** Connections each instance's PostgreSQL pool opens at most (several instances share the server's max_connections). */
export const POSTGRES_POOL_SIZE = 10

/**
 * How long a transaction waits for a connection (maxWait) and may then run (timeout). Every feed
 * write locks its workspace row, so a burst of writes to one workspace queues on the pool: with
 * Prisma's 2 s default, ~1,000 writes in flight over two instances failed in part (P2028) although
 * the database was merely busy. Waiting as long as the pool's own connect timeout serves such a
 * burst; beyond that the request is answered UNAVAILABLE (see isDatabaseSaturated) and retried.
 */
export const TRANSACTION_OPTIONS = { maxWait: 10_000, timeout: 10_000 } as const

/**
 * Prisma errors that mean "too busy right now, nothing was committed": no connection in time
 * (P2024), a transaction that could not start or ran out of time and was rolled back (P2028), a
 * write conflict or deadlock PostgreSQL aborted (P2034), the server's connection limit (P2037).
 */
const SATURATION_CODES: ReadonlySet<string> = new Set(['P2024', 'P2028', 'P2034', 'P2037'])

/**
 * pg's own errors when no connection is had within connectionTimeoutMillis: none frees up in the
 * pool, or the server does not accept a new one in time. They have no code, and Prisma's pg adapter
 * passes them on as they are for a query outside a transaction.
 */
const POOL_TIMEOUT_MESSAGES: ReadonlySet<string> = new Set(['timeout exceeded when trying to connect', 'Connection terminated due to connection timeout'])

export function isDatabaseSaturated(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  if (error.name === 'PrismaClientKnownRequestError') return typeof code === 'string' && SATURATION_CODES.has(code)
  return code === undefined && POOL_TIMEOUT_MESSAGES.has(error.message)
}

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
    const db = new SqliteClient({ adapter: new PrismaBetterSQLite3({ url }), log, transactionOptions: TRANSACTION_OPTIONS })
    if (options.onQuery) db.$on('query' as never, (e: { query: string }) => options.onQuery!(e.query))
    // WAL lets readers proceed during a write; the busy timeout turns lock contention into waiting, not errors.
    await db.$queryRawUnsafe('PRAGMA journal_mode = WAL')
    // better-sqlite3 runs every statement on the main thread: with SQLite's default (FULL) each
    // commit waits for an fsync of the WAL there, holding the event loop (bench P10). NORMAL in WAL
    // mode syncs at checkpoints only: a commit survives a crash of the process, and only a power
    // loss or OS crash can take back the last commits (never corrupting the file).
    await db.$executeRawUnsafe('PRAGMA synchronous = NORMAL')
    await db.$executeRawUnsafe('PRAGMA busy_timeout = 5000')
    await db.$executeRawUnsafe('PRAGMA foreign_keys = ON')
    return db
  }
  const [{ PrismaClient: PgClient }, { PrismaPg }] = await Promise.all([
    import('../generated/postgres/client.ts'),
    import('@prisma/adapter-pg'),
  ])
  const db = new PgClient({
    adapter: new PrismaPg({ connectionString: url, max: POSTGRES_POOL_SIZE, connectionTimeoutMillis: TRANSACTION_OPTIONS.maxWait }),
    log,
    transactionOptions: TRANSACTION_OPTIONS,
  })
  if (options.onQuery) db.$on('query' as never, (e: { query: string }) => options.onQuery!(e.query))
  await db.$connect()
  return db as unknown as Db
}
