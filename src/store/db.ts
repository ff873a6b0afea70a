import type { PrismaClient } from '../generated/sqlite/client.ts'
import type { DatabaseProvider } from '../config/config.ts'
import type { Pool, PoolClient } from 'pg'
import { LockAwareSqliteFactory, sqliteCodeOf } from './sqlite-adapter.ts'
import { withinDeadline } from '../util/deadline.ts'
import { postgresLimits } from './postgres-limits.ts'
import { RollbackSafePgFactory } from './postgres-adapter.ts'

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

/**
 * PostgreSQL's SQLSTATEs for the same, as the driver adapter passes them on (a DriverAdapterError
 * for model queries, P2010 for raw SQL, pg's own error): a statement that waited for a lock past
 * lock_timeout (55P03) or ran past a statement_timeout (57014), a transaction the server ended
 * after idle_in_transaction_session_timeout (25P03; its next statement usually meets the closed
 * connection instead, which is isDatabaseUnreachable's), a serialization failure or deadlock
 * (40001, 40P01). The limits are the lease's fence (postgres-limits.ts); a healthy instance meets
 * them only when it was too slow, and nothing of the statement or its transaction was committed.
 */
const SATURATION_SQLSTATES: ReadonlySet<string> = new Set(['55P03', '57014', '25P03', '40001', '40P01'])

export function isDatabaseSaturated(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const sqlState = sqlStateOf(error)
  if (sqlState !== undefined && SATURATION_SQLSTATES.has(sqlState)) return true
  const code = (error as { code?: unknown }).code
  if (error.name === 'PrismaClientKnownRequestError') return typeof code === 'string' && SATURATION_CODES.has(code)
  return code === undefined && POOL_TIMEOUT_MESSAGES.has(error.message)
}

/**
 * Prisma's codes for a database server that cannot be reached or dropped the connection: can't
 * reach it (P1001, a refused connection), timed out reaching it (P1002), the server closed the
 * connection (P1017, a reset).
 */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set(['P1001', 'P1002', 'P1017'])

/** The driver adapter's kinds for the same (Prisma maps them to the codes above, or to P2010 for raw SQL). */
const UNREACHABLE_KINDS: ReadonlySet<string> = new Set(['DatabaseNotReachable', 'ConnectionClosed'])

/**
 * PostgreSQL's SQLSTATEs for a server going away: class 08 (connection exception) and 57P01
 * admin_shutdown (a fast stop ends every session with it), 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up or shutting down).
 */
const UNREACHABLE_SQLSTATE = /^(08|57P0[123]$)/

/**
 * pg's own errors, without a code, for a connection that died under a query (an immediate stop, a
 * crash, a dropped network) and for a pooled client used after that. Prisma's pg adapter passes
 * them on as they are, even inside a transaction.
 */
const CONNECTION_LOST_MESSAGES: ReadonlySet<string> = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
])

/** Node's socket errors for a server that is not there (or went away): what pg raises before Prisma maps it. */
const SOCKET_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH'])

/** The driver adapter's account of an error (its kind, the database's own code), as Prisma passes it on. */
function adapterCauseOf(error: Error): { kind?: unknown; originalCode?: unknown } | undefined {
  const { meta, cause } = error as { meta?: { driverAdapterError?: { cause?: unknown } }; cause?: unknown }
  const adapterCause = error.name === 'DriverAdapterError' ? cause : meta?.driverAdapterError?.cause
  return typeof adapterCause === 'object' && adapterCause !== null ? adapterCause : undefined
}

/** The SQLSTATE of a PostgreSQL error, raised by pg or passed on by Prisma's pg adapter. */
function sqlStateOf(error: Error): string | undefined {
  const adapterCause = adapterCauseOf(error)
  if (adapterCause?.kind === 'postgres' && typeof adapterCause.originalCode === 'string') return adapterCause.originalCode
  const { code, severity } = error as { code?: unknown; severity?: unknown }
  return typeof code === 'string' && typeof severity === 'string' ? code : undefined
}

/**
 * Errors that mean "the database cannot be reached now": a stopped or
 * restarting PostgreSQL, measured with a real one (test/server/database-outage.test.ts):
 * P1001 for every query, batch and transaction begun while it is down (P2010 for raw SQL, with the
 * same cause); the DriverAdapterError of 57P01 for a model query in flight at a fast stop; pg's
 * "Connection terminated unexpectedly" and "Client has encountered a connection error…" for
 * a query or an interactive transaction whose connection died. A transaction cut this way is rolled
 * back by the server. Operations are answered UNAVAILABLE and /readyz 503 until a probe gets an answer.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const kind = adapterCauseOf(error)?.kind
  if (typeof kind === 'string' && UNREACHABLE_KINDS.has(kind)) return true
  const sqlState = sqlStateOf(error)
  if (sqlState !== undefined && UNREACHABLE_SQLSTATE.test(sqlState)) return true
  const { code } = error as { code?: unknown }
  switch (error.name) {
    case 'PrismaClientKnownRequestError':
    case 'PrismaClientInitializationError':
      return typeof code === 'string' && UNREACHABLE_CODES.has(code)
    case 'DriverAdapterError':
      return false
  }
  if (typeof code === 'string') return SOCKET_CODES.has(code)
  return CONNECTION_LOST_MESSAGES.has(error.message)
}

/**
 * SQLite's codes for a file that answers but takes no write now: another process holds its write
 * lock past the adapter's wait (BUSY, LOCKED), the disk is full (FULL), the OS refused its I/O
 * (IOERR and its extended codes).
 */
const SQLITE_WRITE_REFUSED = /^SQLITE_(BUSY|LOCKED|FULL|IOERR)/

/** PostgreSQL's SQLSTATE for a full disk: disk_full, "could not extend file … No space left on device". */
const POSTGRES_DISK_FULL = '53100'

/**
 * Errors that mean "the database answers but takes no write now", measured with a real file and a
 * real full disk (test/faults/r16-sqlite-locked.fault.ts, r17-disk-full.fault.ts): SQLite's write
 * lock held by another process, a full disk on either database, an I/O error. Nothing of the write
 * was committed. Answered UNAVAILABLE, and /readyz is 503 until a write goes through again.
 */
export function isDatabaseRefusingWrites(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const sqliteCode = sqliteCodeOf(error)
  if (sqliteCode !== undefined) return SQLITE_WRITE_REFUSED.test(sqliteCode)
  return sqlStateOf(error) === POSTGRES_DISK_FULL
}

/** Saturated, unreachable or refusing writes: the request is answered UNAVAILABLE (retry). */
export function isDatabaseUnavailable(error: unknown): boolean {
  return isDatabaseSaturated(error) || isDatabaseUnreachable(error) || isDatabaseRefusingWrites(error)
}

/**
 * One cheap round trip (`SELECT 1`): resolves true when the database answered within `timeoutMs`,
 * false when it is unreachable, and undefined when it did not answer in time (busy or not: not known).
 */
export async function pingDatabase(db: Db, timeoutMs: number): Promise<boolean | undefined> {
  const late = AbortSignal.timeout(timeoutMs)
  const answer = db.$queryRawUnsafe('SELECT 1').then(
    () => true,
    (error: unknown) => (isDatabaseUnreachable(error) ? false : undefined),
  )
  return Promise.race([answer, new Promise<undefined>((resolve) => late.addEventListener('abort', () => resolve(undefined), { once: true }))])
}

/**
 * One small committed write (the feed epoch row rewritten as it is): resolves true when it committed
 * within `timeoutMs`, false otherwise. It needs what any write needs (the write lock, room on the
 * disk for a page), so it tells when writes that were refused go through again.
 */
export async function probeWrite(db: Db, timeoutMs: number): Promise<boolean> {
  const write = db.$executeRawUnsafe(`UPDATE "FeedEpoch" SET "epoch" = "epoch" WHERE "id" = 'feed'`).then(
    () => true,
    () => false,
  )
  return withinDeadline(timeoutMs, write).catch(() => false)
}

/**
 * Prisma's transaction manager sends ROLLBACK (or COMMIT) before it hands a transaction's connection
 * back to the pool; when the connection died under the transaction (a stopped or restarted
 * PostgreSQL) that statement throws and the connection is never released. Each transaction an
 * outage cut would hold one of the pool's connections for good (measured: three transactions in
 * flight at a stop left seven of ten, and the pool could no longer end), so after a few outages the
 * server would not resume by itself. A connection that ends while checked out is released here as
 * broken, so the pool drops it; the owner's own release later is a no-op.
 */
function releasingDeadConnections(pool: Pool): Pool {
  const checkedOut = new WeakSet<PoolClient>()
  const watched = new WeakSet<PoolClient>()
  pool.on('acquire', (client) => {
    checkedOut.add(client)
    if (watched.has(client)) return
    watched.add(client)
    client.once('end', () => {
      if (!checkedOut.has(client)) return
      const release = client.release
      client.release = () => undefined
      release(new Error('Connection terminated while checked out'))
    })
  })
  pool.on('release', (_error, client) => checkedOut.delete(client))
  return pool
}

export interface ConnectOptions {
  /** Called with every SQL statement Prisma sends (used to prove read paths do not N+1). */
  onQuery?: (sql: string) => void
  /**
   * SESSION_LEASE_MS of the server this connects for: on PostgreSQL every connection then runs with
   * time limits that end what a stalled holder leaves open well inside the lease (postgres-limits.ts).
   * Absent (tools, tests): the server's defaults, no limits.
   */
  leaseMs?: number
}

/** The provider of each connected client, for the few statements whose best form differs (store/message-content.ts). */
const providers = new WeakMap<Db, DatabaseProvider>()

export function providerOf(db: Db): DatabaseProvider {
  const provider = providers.get(db)
  if (!provider) throw new Error('providerOf: a client not opened by connectDatabase')
  return provider
}

export async function connectDatabase(provider: DatabaseProvider, url: string, options: ConnectOptions = {}): Promise<Db> {
  const log = options.onQuery ? [{ emit: 'event' as const, level: 'query' as const }] : []
  if (provider === 'sqlite') {
    const [{ PrismaClient: SqliteClient }, { PrismaBetterSQLite3 }] = await Promise.all([
      import('../generated/sqlite/client.ts'),
      import('@prisma/adapter-better-sqlite3'),
    ])
    // timeout 0: SQLite's busy handler would wait for another process's lock on the event loop; the
    // adapter waits between attempts instead (store/sqlite-adapter.ts), so SQLite itself never waits.
    const adapter = new LockAwareSqliteFactory(new PrismaBetterSQLite3({ url, timeout: 0 }))
    const db = new SqliteClient({ adapter, log, transactionOptions: TRANSACTION_OPTIONS })
    if (options.onQuery) db.$on('query' as never, (e: { query: string }) => options.onQuery!(e.query))
    // WAL lets readers proceed during a write.
    await db.$queryRawUnsafe('PRAGMA journal_mode = WAL')
    // better-sqlite3 runs every statement on the main thread: with SQLite's default (FULL) each
    // commit waits for an fsync of the WAL there, holding the event loop (bench P10). NORMAL in WAL
    // mode syncs at checkpoints only: a commit survives a crash of the process, and only a power
    // loss or OS crash can take back the last commits (never corrupting the file).
    await db.$executeRawUnsafe('PRAGMA synchronous = NORMAL')
    await db.$executeRawUnsafe('PRAGMA foreign_keys = ON')
    providers.set(db, 'sqlite')
    return db
  }
  const [{ PrismaClient: PgClient }, { PrismaPg }, { default: pg }] = await Promise.all([
    import('../generated/postgres/client.ts'),
    import('@prisma/adapter-pg'),
    import('pg'),
  ])
  const limits = options.leaseMs === undefined ? {} : postgresLimits(options.leaseMs)
  const pool = releasingDeadConnections(
    new pg.Pool({ connectionString: url, max: POSTGRES_POOL_SIZE, connectionTimeoutMillis: TRANSACTION_OPTIONS.maxWait, ...limits }),
  )
  const db = new PgClient({
    adapter: new RollbackSafePgFactory(new PrismaPg(pool, { disposeExternalPool: true })),
    log,
    transactionOptions: TRANSACTION_OPTIONS,
  })
  if (options.onQuery) db.$on('query' as never, (e: { query: string }) => options.onQuery!(e.query))
  await db.$connect()
  providers.set(db as unknown as Db, 'postgres')
  return db as unknown as Db
}
