// `npm run bench:forwarding`: what forwarding a session command to its owner over Redis costs.
// Two instances (in this process) on one PostgreSQL database and one Redis; A runs the session.
// The same command over HTTP to A (the owner, the baseline) and to B (which forwards it to A),
// measured in the same run, alternating A and B in blocks so both see the same conditions.
import os from 'node:os'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer, type RunningServer } from '../src/server/app.ts'
import { deployMigrations } from '../src/store/migrate.ts'
import { ownerOf } from '../src/store/instances.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { startRedisServer } from '../test/support/redis-server.ts'
import { scrapeMetric } from '../test/support/metrics.ts'

const COMMANDS = Number(process.env.BENCH_FORWARD_COMMANDS ?? 500)
const WARMUP = Number(process.env.BENCH_FORWARD_WARMUP ?? 50)
const BLOCK = 50
const adminToken = 'bench-admin-token-0123456789'

const MEASURED = {
  refreshSessionGit: 'mutation ($s: ID!) { refreshSessionGit(sessionId: $s) { id } }',
  resumeSession: 'mutation ($s: ID!) { resumeSession(id: $s) { id state } }',
} as const
type Measured = keyof typeof MEASURED
/** The bus's name of each measured mutation (the metrics' `command` label). */
const COMMAND_LABEL: Record<Measured, string> = { refreshSessionGit: 'refreshGit', resumeSession: 'resume' }

async function gql<T>(server: RunningServer, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({ query, variables }),
  })
  const body = (await response.json()) as { data?: T; errors?: unknown[] }
  if (body.errors?.length || !body.data) throw new Error(`${response.status} ${JSON.stringify(body.errors)}`)
  return body.data
}

const metric = (server: RunningServer, name: string, labels: Record<string, string> = {}) => scrapeMetric(server.url, name, labels)

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

const cluster = await startPostgresCluster()
const redis = await startRedisServer().catch((error: unknown) => {
  cluster.stop()
  throw error
})
const servers: RunningServer[] = []
try {
  await cluster.query('CREATE DATABASE tss_bench')
  const databaseUrl = cluster.url('tss_bench')
  await deployMigrations('postgres', databaseUrl)
  const env = {
    PORT: '0',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    ADMIN_TOKEN: adminToken,
    REPOSITORY_ROOTS: os.tmpdir(),
    // Thousands of mutations in a minute by one caller: the default budget (1000) would refuse them.
    RATE_LIMIT_MUTATIONS: '0',
  }
  const start = () => startServer(loadConfig(env), { logger: pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }), skipMigrations: true })
  const a = await start()
  servers.push(a)
  const b = await start()
  servers.push(b)

  const { createWorkspace } = await gql<{ createWorkspace: { id: string } }>(a, 'mutation { createWorkspace(name: "bench") { id } }')
  const { createTask } = await gql<{ createTask: { id: string } }>(a, 'mutation ($w: ID!) { createTask(input: { workspaceId: $w, title: "forwarding" }) { id } }', {
    w: createWorkspace.id,
  })
  const { startSession } = await gql<{ startSession: { id: string; state: string } }>(a, 'mutation ($t: ID!) { startSession(input: { taskId: $t }) { id state } }', {
    t: createTask.id,
  })
  const sessionId = startSession.id
  const owner = await ownerOf(a.store, sessionId)
  if (owner?.ownerInstanceId !== a.instanceId || !owner.ownerLive) throw new Error(`A does not own the session: ${JSON.stringify(owner)}`)

  const turnsBefore = await a.store.db.turn.count({ where: { sessionId } })
  const targets = { owner: a, forwarded: b }
  type Target = keyof typeof targets
  const samples = new Map<string, number[]>()
  const time = async (command: Measured, target: Target, n: number, record: boolean) => {
    const key = `${command}/${target}`
    if (!samples.has(key)) samples.set(key, [])
    for (let i = 0; i < n; i++) {
      const started = performance.now()
      await gql(targets[target], MEASURED[command], { s: sessionId })
      if (record) samples.get(key)!.push(performance.now() - started)
    }
  }

  const wallStarted = performance.now()
  for (const command of Object.keys(MEASURED) as Measured[]) {
    await time(command, 'owner', WARMUP, false)
    await time(command, 'forwarded', WARMUP, false)
    for (let done = 0; done < COMMANDS; done += BLOCK) {
      const n = Math.min(BLOCK, COMMANDS - done)
      // Which target goes first alternates too, so neither always runs right after the other.
      const order: Target[] = (done / BLOCK) % 2 === 0 ? ['owner', 'forwarded'] : ['forwarded', 'owner']
      for (const target of order) await time(command, target, n, true)
    }
  }
  const wallMs = performance.now() - wallStarted

  // The session is still A's, and the resumes relaunched nothing.
  const after = await ownerOf(a.store, sessionId)
  if (after?.ownerInstanceId !== a.instanceId) throw new Error(`the session moved: ${JSON.stringify(after)}`)
  const turnsAfter = await a.store.db.turn.count({ where: { sessionId } })
  const agents = [a.sessions.liveSessionIds().length, b.sessions.liveSessionIds().length]
  if (turnsAfter !== turnsBefore || agents[0] !== 1 || agents[1] !== 0)
    throw new Error(`resumeSession relaunched: turns ${turnsBefore} -> ${turnsAfter}, agents on A and B ${agents.join(', ')}`)

  console.info(
    `Session command round trip over HTTP, ${COMMANDS} sequential requests per target after ${WARMUP} warm-up, blocks of ${BLOCK} alternating` +
      ` (two instances in one process, one PostgreSQL, one Redis; ${(wallMs / 1000).toFixed(1)} s)`,
  )
  console.info(`  ${'command'.padEnd(18)} ${'target'.padEnd(22)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)}`)
  const summary: string[] = []
  for (const command of Object.keys(MEASURED) as Measured[]) {
    const stats = {} as Record<Target, { p50: number; p99: number }>
    for (const target of Object.keys(targets) as Target[]) {
      const sorted = [...samples.get(`${command}/${target}`)!].sort((x, y) => x - y)
      stats[target] = { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) }
      const label = target === 'owner' ? 'A, the owner' : 'B, forwarded to A'
      console.info(`  ${command.padEnd(18)} ${label.padEnd(22)} ${stats[target].p50.toFixed(2).padStart(8)} ${stats[target].p99.toFixed(2).padStart(8)}`)
    }
    const p50 = stats.forwarded.p50 / stats.owner.p50
    const p99 = stats.forwarded.p99 / stats.owner.p99
    console.info(`  ${command.padEnd(18)} ${'ratio forwarded/owner'.padEnd(22)} ${`${p50.toFixed(2)}x`.padStart(8)} ${`${p99.toFixed(2)}x`.padStart(8)}`)
    summary.push(`${command} p50 ${p50.toFixed(2)}x / p99 ${p99.toFixed(2)}x`)
  }

  const HISTOGRAM = 'instance_forwarded_command_duration_seconds_count'
  console.info(`  ${HISTOGRAM} (/metrics, warm-up included):`)
  for (const command of Object.keys(MEASURED) as Measured[]) {
    const label = { command: COMMAND_LABEL[command] }
    const [ofA, ofB, sumB, servedByA] = await Promise.all([
      metric(a, HISTOGRAM, label),
      metric(b, HISTOGRAM, label),
      metric(b, 'instance_forwarded_command_duration_seconds_sum', label),
      metric(a, 'instance_served_commands_total', label),
    ])
    const mean = ofB > 0 ? `${((sumB / ofB) * 1000).toFixed(2)} ms` : '-'
    console.info(`    ${label.command.padEnd(10)} B ${ofB} (expected ${WARMUP + COMMANDS}), A ${ofA} (expected 0); A served ${servedByA}; B's mean bus round trip ${mean}`)
  }
  console.info(`Forwarding to the owner over Redis costs: ${summary.join('; ')} (forwarded / owner).`)
} finally {
  for (const server of servers.reverse()) await server.close()
  await redis.stop()
  cluster.stop()
}
