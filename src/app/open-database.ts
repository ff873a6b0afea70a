import type { Config } from '../config/config.ts'
import type { Logger } from '../observability/logger.ts'
import { connectDatabase, type Db } from '../store/db.ts'
import { deployMigrations, pendingMigrations } from '../store/migrate.ts'
import { describeUrl } from '../server/preflight.ts'
import { sqliteFile } from '../server/sqlite-preflight.ts'
import { StartupError, withoutCredentials } from '../server/startup-error.ts'

export interface OpenDatabaseOptions {
  skipMigrations?: boolean
  onQuery?: (sql: string) => void
}

/**
 * Connects to the configured database and applies pending migrations. The preflight has already
 * proven the database answers; what still fails here (a file SQLite refuses, a migration the
 * database rejects) is the operator's to fix, so it ends the start as one StartupError line.
 */
export async function openDatabase(config: Config, logger: Logger, options: OpenDatabaseOptions): Promise<Db> {
  const connect = () => connectDatabase(config.databaseProvider, config.databaseUrl, { onQuery: options.onQuery, leaseMs: config.sessionLeaseMs })
  let db: Db | undefined
  try {
    db = await connect()
    if (!options.skipMigrations) {
      const started = performance.now()
      const pending = await pendingMigrations(db, config.databaseProvider)
      if (pending.length > 0) {
        // The CLI takes the database for itself (SQLite's write lock): this connection waits outside.
        await db.$disconnect()
        db = undefined
        await deployMigrations(config.databaseProvider, config.databaseUrl)
        db = await connect()
      }
      const ms = Math.round(performance.now() - started)
      logger.info({ provider: config.databaseProvider, pending: pending.length, ms }, pending.length > 0 ? 'migrations applied' : 'migrations up to date')
    }
    return db
  } catch (error) {
    await db?.$disconnect().catch(() => undefined)
    throw databaseStartupError(config, error)
  }
}

/** One line naming the database (never its credentials) and the driver's or the migration CLI's own reason. */
export function databaseStartupError(config: Pick<Config, 'databaseProvider' | 'databaseUrl'>, error: unknown): StartupError {
  if (error instanceof StartupError) return error
  const where = config.databaseProvider === 'sqlite' ? `the SQLite database ${sqliteFile(config.databaseUrl) ?? ':memory:'}` : `PostgreSQL at ${describeUrl(config.databaseUrl, 5432)}`
  return new StartupError(
    `${where} could not be opened or migrated (${reasonOf(error)})`,
    'DATABASE_URL',
    'Correct DATABASE_URL, or the database or file it names, and start again.',
  )
}

const MAX_REASON_CHARACTERS = 300

/**
 * Prisma's and the migration CLI's messages span lines (the invocation, blank lines, then the
 * cause; a CLI banner, then `Error: …`): the line that says what failed, cut, without credentials.
 */
function reasonOf(error: unknown): string {
  const text = withoutCredentials(error instanceof Error ? error.message : String(error))
  const lines = text.split('\n').map((line) => line.trim()).filter((line) => line !== '')
  const reason = lines.find((line) => /^(Error: |P\d{4}\b)/.test(line)) ?? lines.at(-1) ?? (error as Error)?.name ?? 'unknown error'
  return reason.length > MAX_REASON_CHARACTERS ? `${reason.slice(0, MAX_REASON_CHARACTERS)}…` : reason
}
