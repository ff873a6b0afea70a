import { ConfigError, loadConfig } from './config/config.ts'
import { startServer } from './app/start-server.ts'
import { StartupError } from './server/preflight.ts'

async function main() {
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
  let server
  try {
    server = await startServer(config)
  } catch (error) {
    // A cause the operator can fix is one line, not a stack trace that reads like a crash.
    if (error instanceof StartupError) {
      process.stderr.write(`Cannot start: ${error.message}\n`)
      process.exit(1)
    }
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
