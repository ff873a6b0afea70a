// `npm run db:migrate`: applies pending migrations to DATABASE_URL (the same step `npm start` runs first).
import { ConfigError, loadConfig } from '../src/config/config.ts'
import { deployMigrations } from '../src/store/migrate.ts'

try {
  const config = loadConfig()
  process.stdout.write(await deployMigrations(config.databaseProvider, config.databaseUrl))
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`)
  process.exit(1)
}
