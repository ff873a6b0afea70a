// A benchmark's server in a process of its own, so what the scenario measures is the server alone:
// clients, byte counters and baselines run in the parent. The child starts the real server
// (startServer) from the environment given and answers the parent's requests over IPC with the
// handlers of a module the scenario names (seeding through the store, heap after GC, …).
import { TYPESCRIPT_EXEC_ARGV } from './runtime.ts'
import { fork, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { RunningServer, StartOptions } from '../src/app/start-server.ts'
import { startOtlpSink, type OtlpSink } from './otlp-sink.ts'

export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789'

/** What a scenario's handler module exports: named requests the parent may make of the server. */
export type Handlers = Record<string, (server: RunningServer, args: never) => unknown>

/** Options the child passes to startServer: only data crosses the process boundary. */
export type ChildStartOptions = Pick<StartOptions, 'multiplexSubscriptions' | 'deliveryLimits' | 'skipMigrations'> & {
  /** Count every SQL statement the server sends (the built-in `statements` handler reads and resets it). */
  countStatements?: boolean
}

interface StartMessage {
  env: Record<string, string>
  handlers?: string
  options?: ChildStartOptions
}
type Request = { id: number; name: string; args: unknown }
type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string }

export interface BenchServer {
  url: string
  wsUrl: string
  child: ChildProcess
  /** Calls the named handler of the scenario's module in the server process. */
  call<T = unknown>(name: string, args?: unknown): Promise<T>
  stop(): Promise<void>
}

/**
 * Starts the server in a child. `env` is its configuration (README variables); without a
 * DATABASE_URL it gets a fresh SQLite file in a temporary folder, removed on stop.
 */
export async function startBenchServer(options: { env?: Record<string, string>; handlers?: URL; start?: ChildStartOptions; execArgv?: string[] } = {}): Promise<BenchServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-bench-'))
  // BENCH_TRACING=http/json|http/protobuf: the server traces, exporting to a sink process (bench/tracing-overhead.ts).
  const sink: OtlpSink | undefined = process.env.BENCH_TRACING ? await startOtlpSink(process.env.BENCH_TRACING) : undefined
  const env = { PORT: '0', ADMIN_TOKEN: BENCH_ADMIN_TOKEN, LOG_LEVEL: 'silent', RATE_LIMIT_MUTATIONS: '0', RATE_LIMIT_SUBSCRIPTIONS: '0', DATABASE_URL: `file:${path.join(dir, 'bench.db')}`, ...sink?.env, ...options.env }
  const child = fork(fileURLToPath(import.meta.url), ['child'], { execArgv: ['--expose-gc', ...TYPESCRIPT_EXEC_ARGV, ...(options.execArgv ?? [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  let ready: ((url: string) => void) | undefined
  let failed: ((e: Error) => void) | undefined
  const started = new Promise<string>((resolve, reject) => ((ready = resolve), (failed = reject)))
  child.on('message', (message: Reply | { ready: string }) => {
    if ('ready' in message) return ready?.(message.ready)
    const waiter = pending.get(message.id)
    pending.delete(message.id)
    if (message.ok) waiter?.resolve(message.value)
    else waiter?.reject(new Error(message.error))
  })
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      const error = new Error(`bench server exited with ${code}`)
      failed?.(error)
      for (const waiter of pending.values()) waiter.reject(error)
      pending.clear()
      resolve()
    }),
  )
  child.send({ env, handlers: options.handlers?.href, options: options.start } satisfies StartMessage)
  const url = await started
  let next = 0
  return {
    url,
    wsUrl: `${url.replace('http', 'ws')}/graphql`,
    child,
    call: <T>(name: string, args?: unknown) =>
      new Promise<T>((resolve, reject) => {
        const id = next++
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
        child.send({ id, name, args } satisfies Request)
      }),
    async stop() {
      if (child.exitCode === null) child.send({ id: -1, name: 'stop', args: null } satisfies Request)
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
      rmSync(dir, { recursive: true, force: true })
      if (sink) {
        const { exports, bytes } = await sink.stop()
        console.info(`  tracing (${process.env.BENCH_TRACING}): ${exports} OTLP exports, ${Math.round(bytes / 1024)} KiB received by the sink`)
      }
    },
  }
}

async function runChild() {
  const { loadConfig } = await import('../src/config/config.ts')
  const { startServer } = await import('../src/app/start-server.ts')
  const { pino } = await import('pino')
  const start = await new Promise<StartMessage>((resolve) => process.once('message', resolve))
  const handlers: Handlers = start.handlers ? ((await import(start.handlers)) as { handlers: Handlers }).handlers : {}
  let statements = 0
  const { countStatements, ...options } = start.options ?? {}
  const server = await startServer(loadConfig({ ...process.env, ...start.env }), {
    logger: pino({ level: 'silent' }),
    ...options,
    ...(countStatements ? { onQuery: () => statements++ } : {}),
  })
  const builtIn: Handlers = {
    /** Heap in use after full collections (several passes: finalizers free more on later ones). */
    heap: () => {
      const gc = (globalThis as { gc?: () => void }).gc!
      for (let i = 0; i < 4; i++) gc()
      return process.memoryUsage().heapUsed
    },
    /**
     * Heap in use after memory-reducing collections (what V8 runs before it would run out of
     * memory): a normal full collection leaves several KB per connection counted that this frees.
     */
    heapReduced: () => {
      const gc = (globalThis as unknown as { gc: (options: object) => void }).gc
      for (let i = 0; i < 2; i++) gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
      return process.memoryUsage().heapUsed
    },
    tables: (s) => s.gateway.tableSizes(),
    subscriptions: (s) => s.gateway.connections().reduce((n, c) => n + c.subscriptions.size, 0),
    /** Open sockets and live subscriptions holding access (each revocation can end them). */
    accessHeld: (s) => s.access.heldCount,
    idle: (s) => s.projector.idle(),
    /** Exports every span finished so far (tracing on; nothing otherwise). */
    flushTracing: (s) => s.tracing.flush(),
    /** CPU time this process has used, user + system, in µs. */
    cpu: () => {
      const { user, system } = process.cpuUsage()
      return user + system
    },
    /** Statements since the last call (with countStatements). */
    statements: () => {
      const counted = statements
      statements = 0
      return counted
    },
  }
  process.on('message', (request: Request) => {
    if (request.name === 'stop') {
      server
        .close()
        .catch((error: unknown) => console.error(error))
        .finally(() => process.exit(0))
      return
    }
    const handler = handlers[request.name] ?? builtIn[request.name]
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`no handler ${request.name}`)
        return handler(server, request.args as never)
      })
      .then(
        (value) => process.send!({ id: request.id, ok: true, value } satisfies Reply),
        (error: unknown) => process.send!({ id: request.id, ok: false, error: error instanceof Error ? error.stack ?? error.message : String(error) } satisfies Reply),
      )
  })
  process.send!({ ready: server.url })
}

if (process.argv[2] === 'child') await runChild()

/** The cursor the SDK keeps from its boot: boot(workspaceId) { feedCursor }. */
export async function bootFeedCursor(server: BenchServer, workspaceId: string): Promise<string> {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
    body: JSON.stringify({ query: 'query($id: ID!) { boot(workspaceId: $id) { feedCursor } }', variables: { id: workspaceId } }),
  })
  const body = (await response.json()) as { data?: { boot: { feedCursor: string } }; errors?: unknown }
  if (!body.data) throw new Error(`boot failed: ${JSON.stringify(body.errors)}`)
  return body.data.boot.feedCursor
}
