import type { Server as HttpServer } from 'node:http'
import pg from 'pg'
import type { Config } from '../config/config.ts'
import { NoAnswer, withinDeadline } from '../util/deadline.ts'
import { StartupError } from './startup-error.ts'
import { lockSqliteDatabase, probeSqliteFile } from './sqlite-preflight.ts'

export { StartupError } from './startup-error.ts'
export { lockSqliteDatabase, sqliteLockFile } from './sqlite-preflight.ts'

export interface PreflightOptions {
  /** How long the database (PostgreSQL, or the file system of a SQLite file) and Redis may take to answer before they count as unreachable. */
  probeTimeoutMs?: number
  /** The caller has just run probeDatabase itself (main.ts, before loading the server): not again. */
  databaseProbed?: boolean
}

export interface Preflight {
  /** Releases what the checks hold for the server's lifetime (the SQLite lock). */
  release(): Promise<void>
}

export const DEFAULT_PROBE_TIMEOUT_MS = 3_000

/**
 * Everything an operator can get wrong is checked before the server prints, migrates or writes
 * anything: the port is bound first (no file is created on a clash), then the database and Redis
 * are probed, and only then is the SQLite lock file created (with its folder). On failure whatever
 * was opened is closed.
 */
export async function runPreflight(config: Config, httpServer: HttpServer, options: PreflightOptions = {}): Promise<Preflight> {
  const timeoutMs = options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS
  await listen(httpServer, config.host, config.port)
  try {
    if (!options.databaseProbed) await probeDatabase(config, timeoutMs)
    if (config.redisUrl) await probeRedis(config.redisUrl, timeoutMs)
    const unlock = config.databaseProvider === 'sqlite' ? await lockSqliteDatabase(config.databaseUrl) : async () => {}
    return { release: unlock }
  } catch (error) {
    await new Promise<void>((resolve) => httpServer.close(() => resolve()))
    throw error
  }
}

/**
 * The database of DATABASE_URL answers within `timeoutMs`: PostgreSQL accepts the credentials and
 * runs a query; a SQLite file can be opened or created there (tried with a probe entry, removed at once).
 * main.ts runs it before it loads the rest of the server, so a wrong URL is one line within seconds.
 */
export async function probeDatabase(config: Pick<Config, 'databaseProvider' | 'databaseUrl'>, timeoutMs = DEFAULT_PROBE_TIMEOUT_MS): Promise<void> {
  if (config.databaseProvider === 'postgres') await probePostgres(config.databaseUrl, timeoutMs)
  else await probeSqliteFile(config.databaseUrl, timeoutMs)
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
export function describeUrl(url: string, defaultPort: number): string {
  try {
    const u = new URL(url)
    const host = u.hostname || u.searchParams.get('host') || 'localhost'
    return `${host}:${u.port || defaultPort}${u.pathname.length > 1 ? u.pathname : ''}`
  } catch {
    return 'the configured address'
  }
}

export async function probePostgres(url: string, timeoutMs = DEFAULT_PROBE_TIMEOUT_MS): Promise<void> {
  const target = describeUrl(url, 5432)
  let client: pg.Client
  try {
    client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs })
  } catch {
    // pg parses the URL here and throws its own TypeError with a stack; the URL itself is never repeated.
    throw new StartupError('is not a valid PostgreSQL URL', 'DATABASE_URL', 'Write it as postgres://user:password@host:5432/database (percent-encode special characters).')
  }
  // A connection dropped after the probe must not surface as an unhandled 'error' event.
  client.on('error', () => undefined)
  const conversation = (async () => {
    await client.connect()
    await client.query('SELECT 1')
  })()
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
  // Loaded here: main.ts checks DATABASE_URL before it loads the rest of the server.
  const { Redis } = await import('ioredis')
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
