// `npm run db:migrate`: applies pending migrations to DATABASE_URL (the same step `npm start` runs first).
import { ConfigError, loadConfig } from '../src/config/config.ts'
import { probeDatabase, StartupError } from '../src/server/preflight.ts'
import { withoutCredentials } from '../src/server/startup-error.ts'
import { deployMigrations } from '../src/store/migrate.ts'

try {
  const config = loadConfig()
  // A DATABASE_URL that cannot work is one line within the probe's deadline, as at a server start.
  await probeDatabase(config)
  process.stdout.write(await deployMigrations(config.databaseProvider, config.databaseUrl))
} catch (error) {
  const message =
    error instanceof ConfigError ? error.message
    : error instanceof StartupError ? `Cannot migrate: ${error.message}`
    // The migration CLI's own report, which names the failed migration; never a URL's credentials.
    : withoutCredentials(String(error))
  process.stderr.write(`${message}\n`)
  process.exit(1)
}
