// P4: the list read paths, tasks(first: 500) and boot (with its first 500 tasks), each with every
// task's statusSummary against the same selection without (the baseline), on SQLite and on
// PostgreSQL, with 0 and 100,000 messages of history spread over the tasks. Each (provider,
// history) pair is its own database and server process, all up at once, and every round sends
// each query to each server in a rotating order, so load that comes and goes on a shared machine
// falls on every figure alike. The servers count their SQL statements per request.
import { deployMigrations } from '../src/store/migrate.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { report, type Row } from './scenario.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN, type BenchServer } from './server-process.ts'
import { PENDING_EVERY, TASKS } from './p4-handlers.ts'
import { median } from './support.ts'

const RUNS = Number(process.env.BENCH_RUNS ?? 30)
const WARMUP = 3
const HISTORY = (process.env.BENCH_HISTORY ?? '0,100000').split(',').map(Number)
const GOAL_WITH_WITHOUT = 2
const GOAL_HISTORY = 1.2

const SUMMARY = `statusSummary { id taskId revision updatedAt lastActivityAt primarySession { id state } foregroundActivity
  activeSubagentCount pendingAction activeError { sessionId taskRepositoryId stamp occurredAt preview category recoveryActions }
  git { additions deletions changedFiles ahead behind comparisonUnavailable }
  pullRequest { count openCount aggregateState representative { repository number url } autoFixEnabled autoMergeEnabled } }`

const QUERIES = {
  tasks: (w: string, summary: boolean) => `{ tasks(workspaceId: "${w}", first: ${TASKS}) { edges { node { id title workflowStepId ${summary ? SUMMARY : ''} } } } }`,
  boot: (w: string, summary: boolean) =>
    `{ boot(workspaceId: "${w}") { feedCursor serverTime workspace { id name } workflow { steps { id name position terminal } } tasks(first: ${TASKS}) { edges { node { id title workflowStepId ${summary ? SUMMARY : ''} } } pageInfo { hasNextPage endCursor } } } }`,
}
type QueryName = keyof typeof QUERIES
type Edge = { node: { statusSummary?: { pendingAction: string | null } } }

interface Target {
  provider: string
  history: number
  server: BenchServer
  workspaceId: string
  samples: Map<string, { ms: number[]; statements: number[] }>
}

async function post(target: Target, query: QueryName, summary: boolean): Promise<Edge[]> {
  const response = await fetch(`${target.server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
    body: JSON.stringify({ query: QUERIES[query](target.workspaceId, summary) }),
  })
  const body = (await response.json()) as { errors?: unknown; data?: { tasks?: { edges: Edge[] }; boot?: { tasks: { edges: Edge[] } } } }
  const edges = body.data?.tasks?.edges ?? body.data?.boot?.tasks.edges
  if (body.errors || edges?.length !== TASKS) throw new Error(`${query} failed: ${JSON.stringify(body.errors)}`)
  return edges
}

async function startTarget(provider: string, history: number, databaseUrl: string | undefined): Promise<Target> {
  // The lease heartbeat would add statements at random to the counted requests.
  const server = await startBenchServer({
    env: { ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), SESSION_LEASE_MS: '3600000' },
    handlers: new URL('./p4-handlers.ts', import.meta.url),
    start: { countStatements: true, skipMigrations: provider === 'PostgreSQL' },
  })
  const workspaceId = await server.call<string>('seed', { history })
  const target: Target = { provider, history, server, workspaceId, samples: new Map() }
  // The first read derives and stores every summary; the warm-up reads must then find them all, pending included.
  for (let i = 0; i < WARMUP; i++)
    for (const query of Object.keys(QUERIES) as QueryName[]) {
      const edges = await post(target, query, true)
      await server.call('idle')
      const pending = edges.filter((e) => e.node.statusSummary?.pendingAction === 'PERMISSION').length
      if (pending !== TASKS / PENDING_EVERY) throw new Error(`${provider}/${history}: expected ${TASKS / PENDING_EVERY} pending tasks, read ${pending}`)
      await post(target, query, false)
    }
  const rows = await server.call<number>('summaryRows', { workspaceId })
  if (rows !== TASKS) throw new Error(`${provider}/${history}: ${rows} summary rows, expected ${TASKS}`)
  return target
}

/** Background work (projections) can only add statements, so the fewest seen is the request's own. */
const fewest = (xs: number[]) => Math.min(...xs)

const cluster = await startPostgresCluster()
const targets: Target[] = []
try {
  const starts: Promise<Target>[] = []
  for (const history of HISTORY) {
    starts.push(startTarget('SQLite', history, undefined))
    await cluster.query(`CREATE DATABASE p4_h${history}`)
    await deployMigrations('postgres', cluster.url(`p4_h${history}`))
    starts.push(startTarget('PostgreSQL', history, cluster.url(`p4_h${history}`)))
  }
  targets.push(...(await Promise.all(starts)))
  targets.sort((a, b) => a.provider.localeCompare(b.provider) || a.history - b.history)

  const slots = targets.flatMap((target) => (['tasks', 'boot'] as const).flatMap((query) => [true, false].map((summary) => ({ target, query, summary }))))
  for (let round = 0; round < RUNS; round++)
    for (let i = 0; i < slots.length; i++) {
      const { target, query, summary } = slots[(i + round * 5) % slots.length]!
      await target.server.call('statements')
      const started = performance.now()
      await post(target, query, summary)
      const ms = performance.now() - started
      const key = `${query}/${summary}`
      if (!target.samples.has(key)) target.samples.set(key, { ms: [], statements: [] })
      target.samples.get(key)!.ms.push(ms)
      target.samples.get(key)!.statements.push(await target.server.call<number>('statements'))
    }

  const rows: Row[] = []
  for (const query of ['tasks', 'boot'] as const)
    for (const target of targets) {
      const withS = target.samples.get(`${query}/true`)!
      const without = target.samples.get(`${query}/false`)!
      const ratio = median(withS.ms) / median(without.ms)
      const label = `${query === 'tasks' ? `tasks(first: ${TASKS})` : 'boot'}, ${target.provider}, ${target.history.toLocaleString('en')} messages`
      rows.push({
        metric: `${label}: with summaries (${fewest(withS.statements)} statements; ${fewest(without.statements)} without)`,
        value: median(withS.ms),
        unit: 'ms',
        baseline: { label: 'without summaries', value: median(without.ms) },
        goal: `≤ ${GOAL_WITH_WITHOUT}×`,
        met: ratio <= GOAL_WITH_WITHOUT,
      })
      if (target.history > 0) {
        const zero = targets.find((t) => t.provider === target.provider && t.history === 0)!
        const zeroMs = median(zero.samples.get(`${query}/true`)!.ms)
        rows.push({ metric: `${label}: with summaries vs no history`, value: median(withS.ms), unit: 'ms', baseline: { label: 'same, 0 messages', value: zeroMs }, goal: `≤ ${GOAL_HISTORY}×`, met: median(withS.ms) / zeroMs <= GOAL_HISTORY })
      }
    }
  report({
    id: 'P4',
    title: `lists: tasks(first: ${TASKS}) and boot, with and without summaries, by history (median of ${RUNS} requests each)`,
    rows,
    notes: [
      'Summaries are stored rows read flat by one raw statement beside the open permission/clarification requests; history does not enter the read path, so the statement count is the same at every history size.',
      'With summaries the response is ~4× larger (every task carries ~35 summary fields); what remains of the with/without ratio is graphql-js resolving those fields, not the database.',
    ],
  })
} finally {
  for (const target of targets) await target.server.stop()
  cluster.stop()
}
