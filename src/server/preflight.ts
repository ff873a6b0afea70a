import { mkdirSync } from 'node:fs'
import type { Server as HttpServer } from 'node:http'
import path from 'node:path'
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3'
import { Redis } from 'ioredis'
import pg from 'pg'
import type { Config } from '../config/config.ts'

/**
 * A start-up failure the operator can fix: what is wrong, which variable or file, what to do.
 * main.ts prints it as one line without a stack, because it is not a crash of the server.
 */
export class StartupError extends Error {
  constructor(
    readonly problem: string,
    /** The environment variable or file at fault. */
    readonly subject: string,
    readonly remedy: string,
  ) {
    super(`${subject}: ${problem}. ${remedy}`)
    this.name = 'StartupError'
  }
}

export interface PreflightOptions {
  /** How long PostgreSQL and Redis may take to answer before they count as unreachable. */
  probeTimeoutMs?: number
}

export interface Preflight {
  /** Releases what the checks hold for the server's lifetime (the SQLite lock). */
  release(): Promise<void>
}

export const DEFAULT_PROBE_TIMEOUT_MS = 3_000

/**
 * Everything an operator can get wrong is checked before the server prints, migrates or writes
 * anything: the port is bound first (no file is created on a clash), then the remote services are
 * probed, and only then is the SQLite lock file created. On failure whatever was opened is closed.
 */
export async function runPreflight(config: Config, httpServer: HttpServer, options: PreflightOptions = {}): Promise<Preflight> {
  const timeoutMs = options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS
  await listen(httpServer, config.host, config.port)
  try {
    if (config.databaseProvider === 'postgres') await probePostgres(config.databaseUrl, timeoutMs)
    if (config.redisUrl) await probeRedis(config.redisUrl, timeoutMs)
    const unlock = config.databaseProvider === 'sqlite' ? await lockSqliteDatabase(config.databaseUrl) : async () => {}
    return { release: unlock }
  } catch (error) {
    await new Promise<void>((resolve) => httpServer.close(() => resolve()))
    throw error
  }
}

const errorCode = (error: unknown): string | undefined => {
  const e = error as { code?: unknown; errors?: { code?: unknown }[] }
  // Node reports a refused dual-stack connect as an AggregateError with one error per address.
  const code = e?.code ?? e?.errors?.find((inner) => inner?.code)?.code
  return typeof code === 'string' ? code : undefined
}

export async function listen(httpServer: HttpServer, host: string, port: number): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      httpServer.once('error', reject)
      httpServer.listen(port, host, () => {
        httpServer.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    const code = errorCode(error)
    if (code === 'EADDRINUSE')
      throw new StartupError(`port ${port} on ${host} is already in use`, 'PORT', 'Stop the process using it, or set PORT to a free port (0 picks any free port).')
    if (code === 'EACCES')
      throw new StartupError(`not permitted to listen on port ${port}`, 'PORT', 'Use a port above 1023, or run with the capability to bind low ports.')
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
      throw new StartupError(`cannot listen on ${host}: not an address of this machine`, 'HOST', 'Set HOST to a local address such as 127.0.0.1 or 0.0.0.0.')
    throw error
  }
}

/** host:port/database of a connection URL, never its user or password. */
function describeUrl(url: string, defaultPort: number): string {
  try {
    const u = new URL(url)
    const host = u.hostname || u.searchParams.get('host') || 'localhost'
    return `${host}:${u.port || defaultPort}${u.pathname.length > 1 ? u.pathname : ''}`
  } catch {
    return 'the configured address'
  }
}

class NoAnswer extends Error {}

/**
 * The probe's whole conversation (connect, authenticate, one round trip) within one deadline: the
 * drivers' own timeouts cover only parts of it (a listener that accepts and stays silent would
 * otherwise hold the start for the driver's defaults or forever).
 */
async function withinDeadline<T>(timeoutMs: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswer()), timeoutMs)
  })
  try {
    return await Promise.race([work, deadline])
  } finally {
    clearTimeout(timer)
  }
}

export async function probePostgres(url: string, timeoutMs = DEFAULT_PROBE_TIMEOUT_MS): Promise<void> {
  const target = describeUrl(url, 5432)
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs })
  // A connection dropped after the probe must not surface as an unhandled 'error' event.
  client.on('error', () => undefined)
  const conversation = (async () => {
    await client.connect()
    await client.query('SELECT 1')
  })()
  conversation.catch(() => undefined) // after a deadline nobody awaits it any more
  try {
    await withinDeadline(timeoutMs, conversation)
  } catch (error) {
    const code = errorCode(error)
    if (code === '3D000')
      throw new StartupError(`PostgreSQL at ${target} has no such database`, 'DATABASE_URL', 'Create the database first (the server creates tables, not databases), or correct DATABASE_URL.')
    if (code === '28P01' || code === '28000')
      throw new StartupError(`PostgreSQL at ${target} refused the user or password`, 'DATABASE_URL', 'Correct the credentials in DATABASE_URL or the server’s pg_hba.conf.')
    const reason = error instanceof NoAnswer || /timeout/i.test((error as Error)?.message ?? '') ? `no answer within ${timeoutMs} ms` : (code ?? 'connection failed')
    throw new StartupError(`PostgreSQL at ${target} is not reachable (${reason})`, 'DATABASE_URL', 'Start PostgreSQL or correct DATABASE_URL.')
  } finally {
    // end() of a connection still being set up waits for it: do not wait, it is closed either way.
    void client.end().catch(() => undefined)
  }
}

export async function probeRedis(url: string, timeoutMs = DEFAULT_PROBE_TIMEOUT_MS): Promise<void> {
  const target = describeUrl(url, 6379)
  // One attempt, no retries and no offline queue: the probe must answer, not wait for Redis to appear.
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  })
  let lastError: unknown
  client.on('error', (error: unknown) => (lastError = error))
  const conversation = (async () => {
    await client.connect()
    await client.ping()
  })()
  conversation.catch(() => undefined)
  try {
    await withinDeadline(timeoutMs, conversation)
  } catch (error) {
    const message = String((error as Error)?.message ?? '')
    if (/NOAUTH|WRONGPASS|invalid password|invalid username/i.test(message))
      throw new StartupError(`Redis at ${target} refused the credentials`, 'REDIS_URL', 'Put the right user and password in REDIS_URL (redis://user:password@host:port).')
    const reason = error instanceof NoAnswer ? `no answer within ${timeoutMs} ms` : (errorCode(error) ?? errorCode(lastError) ?? 'connection failed')
    throw new StartupError(`Redis at ${target} is not reachable (${reason})`, 'REDIS_URL', 'Start Redis, correct REDIS_URL, or unset it to run one instance with in-process pub/sub.')
  } finally {
    client.disconnect()
  }
}

/** The lock file beside a SQLite database file (`app.db` → `app.db.lock`). */
export function sqliteLockFile(databaseUrl: string): string | undefined {
  const file = databaseUrl.replace(/^file:/, '').replace(/\?.*$/, '')
  return file && file !== ':memory:' ? `${path.resolve(file)}.lock` : undefined
}

/**
 * One SQLite file serves one server process: a second one would race on migrations and on the
 * runtime state only one process can own (agents, startup recovery). The lock is SQLite's own
 * write lock on a small companion database, held for the process's lifetime; the operating
 * system drops it when the process dies, however it dies, so no stale lock is ever left behind.
 */
/**
 * The connections holding SQLite locks. Without a reference of its own, a lock would last only as
 * long as its caller kept the release function: once that is garbage, the collector closes the
 * connection and another process could open the same file.
 */
const heldLocks = new Set<{ dispose(): Promise<void> }>()

export async function lockSqliteDatabase(databaseUrl: string): Promise<() => Promise<void>> {
  const lockFile = sqliteLockFile(databaseUrl)
  if (!lockFile) return async () => {}
  const databaseFile = lockFile.slice(0, -'.lock'.length)
  let connection: Awaited<ReturnType<PrismaBetterSQLite3['connect']>> | undefined
  try {
    mkdirSync(path.dirname(lockFile), { recursive: true })
    // timeout 0: a lock held elsewhere is an answer now, not after SQLite's busy wait.
    connection = await new PrismaBetterSQLite3({ url: `file:${lockFile}`, timeout: 0 }).connect()
    // A write lock that is never committed: nothing is written, so the journal can stay in memory
    // and no -journal file appears beside the lock.
    await connection.executeScript('PRAGMA journal_mode = MEMORY; BEGIN IMMEDIATE;')
  } catch (error) {
    await connection?.dispose().catch(() => undefined)
    // The adapter reports SQLITE_BUSY as the driver-neutral kind `SocketTimeout`.
    if ((error as { cause?: { kind?: string } })?.cause?.kind === 'SocketTimeout')
      throw new StartupError(
        `another server process is already using the SQLite database ${databaseFile}`,
        'DATABASE_URL',
        `Stop that process, or point DATABASE_URL at another file; one SQLite file serves one process (run several instances on PostgreSQL). Lock: ${lockFile}`,
      )
    throw new StartupError(
      `cannot create or open ${lockFile} beside the SQLite database`,
      'DATABASE_URL',
      'Make its directory writable by the server’s user, or point DATABASE_URL elsewhere.',
    )
  }
  const held = connection
  heldLocks.add(held)
  return async () => {
    heldLocks.delete(held)
    await held.dispose()
  }
}
