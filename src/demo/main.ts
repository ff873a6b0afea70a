// `npm run demo`: the server on the embedded default, a seeded workspace of 27 tasks with mock
// agents kept busy, and the page URL with the demo user's token. Ctrl-C stops everything.
//
// Two processes: this file started by tsx is a small launcher that runs the demo itself (this file
// again, with DEMO_CHILD=1) in a process group of its own and hands it exactly one signal per
// Ctrl-C / SIGTERM. Run directly under the tsx CLI, a busy demo would be SIGKILLed on Ctrl-C (tsx
// kills a child that has not reported the signal back within 2 × 30 ms, and a server streaming two
// dozen agents on SQLite can stall its event loop that long), leaving its temporary repositories
// behind; and the terminal's SIGINT would reach every agent process too, which would end them as
// crashes instead of letting the server stop them.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { RunningServer } from '../app/start-server.ts'
import type { DemoActivity } from './activity.ts'
import type { BundledMock } from './fast-mock.ts'
import { errorText } from './graphql.ts'
import type { SeededWorkspace } from './seed.ts'

const DEFAULT_DATABASE_URL = 'file:./data/demo.db'

/** The environment of the demo: the user's settings win; the demo fills in what it needs. */
function demoEnvironment(env: NodeJS.ProcessEnv, mock: BundledMock | undefined): NodeJS.ProcessEnv {
  const roots = (env.REPOSITORY_ROOTS ?? '').split(':').filter((r) => r.trim() !== '')
  return {
    ...env,
    DATABASE_URL: env.DATABASE_URL || DEFAULT_DATABASE_URL,
    // The task repositories are temporary folders; the user's own roots (or the default, home) stay allowed.
    REPOSITORY_ROOTS: [...(roots.length ? roots : [os.homedir()]), os.tmpdir()].join(':'),
    ADMIN_TOKEN: env.ADMIN_TOKEN || `demo_admin_${randomBytes(24).toString('base64url')}`,
    LOG_LEVEL: env.LOG_LEVEL || 'warn',
    // The same mock agent, started as one bundled file (fast-mock.ts); configured profiles are left alone.
    ...(mock && !env.AGENT_PROFILES?.trim() && { AGENT_PROFILES: JSON.stringify({ mock: mock.profile }) }),
  }
}

/** A fresh demo database each run: removed first, unless another server holds it (that start then fails as usual). */
async function freshDatabase(databaseUrl: string): Promise<void> {
  const { lockSqliteDatabase } = await import('../server/preflight.ts')
  const release = await lockSqliteDatabase(databaseUrl)
  try {
    const file = databaseUrl.slice('file:'.length).split('?', 1)[0]!
    await Promise.all(['', '-wal', '-shm', '-journal'].map((suffix) => rm(`${file}${suffix}`, { force: true })))
  } finally {
    await release()
  }
}

/** The URL a browser on this machine opens (a wildcard listen address is not one). */
function browserUrl(server: RunningServer, host: string): string {
  return ['0.0.0.0', '::', '[::]'].includes(host) ? `http://127.0.0.1:${server.port}` : server.url
}

/** The demo itself (the child process). */
async function runDemo(): Promise<void> {
  // Loaded here, so the launcher stays a small process.
  const { ConfigError, loadConfig } = await import('../config/config.ts')
  const { startServer } = await import('../app/start-server.ts')
  const { StartupError } = await import('../server/preflight.ts')
  const { startDemoActivity } = await import('./activity.ts')
  const { bundleMockAgent } = await import('./fast-mock.ts')
  const { seedDemoWorkspace } = await import('./seed.ts')
  const { SCRIPTS_DIR_ENV } = await import('../agents/mock/script-drop.ts')

  const mock = process.env.AGENT_PROFILES?.trim() ? undefined : await bundleMockAgent()
  // Without the bundle the agents find the scripts folder in the environment they inherit from here.
  const ownScriptDir = mock ? undefined : await mkdtemp(path.join(os.tmpdir(), 'tss-demo-scripts-'))
  if (ownScriptDir) process.env[SCRIPTS_DIR_ENV] = ownScriptDir
  const scriptDir = mock?.scriptDir ?? ownScriptDir!
  const removeAgentFiles = async () => {
    await mock?.remove()
    if (ownScriptDir) await rm(ownScriptDir, { recursive: true, force: true })
  }
  let config
  try {
    config = loadConfig(demoEnvironment(process.env, mock))
  } catch (error) {
    await removeAgentFiles()
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`)
      process.exit(1)
    }
    throw error
  }

  const state: { server?: RunningServer; seed?: SeededWorkspace; activity?: DemoActivity; seeding?: Promise<unknown>; stopping?: boolean } = {}

  let firstSignalAt = 0
  const shutdown = async (reason: string, code = 0) => {
    if (state.stopping) {
      if (Date.now() - firstSignalAt < 1_000) return // the same Ctrl-C, delivered twice
      process.stderr.write('Stopping at once.\n')
      process.exit(1)
    }
    state.stopping = true
    firstSignalAt = Date.now()
    console.info(`\n${reason}: stopping the demo…`)
    // Each step runs whatever the one before did, so the temporary folders go even after a failure.
    const step = async (what: string, action: () => Promise<unknown> | undefined) => {
      try {
        await action()
      } catch (error) {
        process.stderr.write(`${what} failed: ${errorText(error)}\n`)
        code = 1
      }
    }
    await state.seeding?.catch(() => undefined)
    await step('Stopping the activity', () => state.activity?.stop())
    // Closing the server ends every agent; then the repositories they worked in can go.
    await step('Closing the server', () => state.server?.close())
    await step('Removing the repositories', () => state.seed?.cleanup({ stopSessions: false }))
    await step('Removing the mock agent files', removeAgentFiles)
    if (code === 0) console.info('Demo stopped; temporary repositories removed.')
    process.exit(code)
  }
  // A second Ctrl-C stops at once.
  process.on('SIGINT', () => void shutdown('SIGINT'))
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  // The launcher is gone (killed, or its terminal closed): stop too, rather than run on unseen.
  process.on('disconnect', () => void shutdown('launcher gone'))
  // The demo must keep running whatever one request does: anything that escaped is logged, not fatal.
  process.on('unhandledRejection', (reason) => process.stderr.write(`[demo] unhandled rejection: ${errorText(reason)}\n`))

  try {
    if (!process.env.DATABASE_URL) await freshDatabase(config.databaseUrl)
    state.server = await startServer(config)
  } catch (error) {
    await removeAgentFiles()
    if (error instanceof StartupError) {
      process.stderr.write(`Cannot start: ${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
  const server = state.server
  if (state.stopping) return

  const base = browserUrl(server, config.host)
  const graphqlUrl = `${server.url}/graphql`
  const started = performance.now()
  const seeding = seedDemoWorkspace({ graphqlUrl, adminToken: config.adminToken!, tasks: 27 })
  state.seeding = seeding
  let seed: SeededWorkspace
  try {
    seed = await seeding
  } catch (error) {
    process.stderr.write(`Seeding the demo workspace failed: ${errorText(error)}\n`)
    if (!state.stopping) await shutdown('seed failed', 1)
    return
  }
  state.seed = seed
  const seedMs = Math.round(performance.now() - started)
  if (state.stopping) return
  state.activity = startDemoActivity({ graphqlUrl, token: seed.token, tasks: seed.tasks, scriptDir })

  const page = await fetch(`${server.url}/`).then(
    (r) => r.status,
    () => 0,
  )
  const sessions = seed.tasks.filter((t) => t.sessionId).length
  console.info(
    [
      '',
      `  Demo workspace ready: ${seed.tasks.length} tasks, ${sessions} mock sessions (seeded in ${(seedMs / 1000).toFixed(1)} s).`,
      '',
      `  Open ${base}/#token=${seed.token}`,
      '',
      `  Token (user "demo"): ${seed.token}`,
      `  GraphiQL:            ${base}/graphql   (header {"Authorization": "Bearer <token>"})`,
      `  Admin token:         ${config.adminToken}`,
      ...(page === 200 ? [] : ['', `  The page is not built yet (GET / answered ${page}): run \`npm run build:web\` and reload.`]),
      '',
      '  Agents keep working in the background. Ctrl-C stops the demo and removes its temporary repositories.',
      '',
    ].join('\n'),
  )
}

/** The launcher: starts the demo in its own process group, forwards each signal once, exits with its status. */
function launch(): void {
  const self = fileURLToPath(import.meta.url)
  // From the sources the child needs the tsx loader (named by URL, like the mock agent profile).
  const loader = self.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : []
  const child = spawn(process.execPath, [...loader, self], {
    env: { ...process.env, DEMO_CHILD: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: true,
  })
  // One Ctrl-C can arrive twice (the terminal's, and tsx relaying it again when it missed this
  // process's acknowledgement), so repeats within a second are one signal; a later one is a second Ctrl-C.
  let lastForwarded = -Infinity
  const forward = (signal: NodeJS.Signals) => () => {
    if (Date.now() - lastForwarded < 1_000) return
    lastForwarded = Date.now()
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
  }
  process.on('SIGINT', forward('SIGINT'))
  process.on('SIGTERM', forward('SIGTERM'))
  process.on('SIGHUP', forward('SIGTERM'))
  child.once('error', (error) => {
    process.stderr.write(`Cannot start the demo: ${error.message}\n`)
    process.exit(1)
  })
  child.once('exit', (code, signal) => process.exit(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0)))
}

if (process.env.DEMO_CHILD === '1') {
  runDemo().catch((error: unknown) => {
    process.stderr.write(`Fatal: ${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  })
} else {
  launch()
}
