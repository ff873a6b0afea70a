import { ConfigError, loadConfig } from './config/config.ts'
import { probeDatabase, StartupError } from './server/preflight.ts'

/** A cause the operator can fix: one line on stderr and exit 1, not a stack trace that reads like a crash. */
function refuseToStart(lines: string): never {
  process.stderr.write(`${lines}\n`)
  process.exit(1)
}

async function main() {
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) refuseToStart(error.message)
    throw error
  }
  let server
  try {
    // Before the rest of the server is loaded (seconds on a busy machine): a DATABASE_URL that
    // cannot work is reported at once, within the probe's deadline.
    await probeDatabase(config)
    const { startServer } = await import('./app/start-server.ts')
    server = await startServer(config, { preflight: { databaseProbed: true } })
  } catch (error) {
    if (error instanceof StartupError) refuseToStart(`Cannot start: ${error.message}`)
    throw error
  }
  const shutdown = (signal: string) => {
    server.logger.info({ signal }, 'signal received')
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        server.logger.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.once('SIGTERM', () => shutdown('SIGTERM'))
  process.once('SIGINT', () => shutdown('SIGINT'))
}

main().catch((error: unknown) => {
  process.stderr.write(`Fatal: ${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
