// P4: the list read paths as the task switcher sends them, the SDK's own documents
// (packages/client/src/operations/queries.graphql): ClientTasksPage with first: 500 and ClientBoot with the
// SDK's page size, each with every task's statusSummary (…StatusSummaryFields) against the same
// document with that selection removed (the baseline), on SQLite and on PostgreSQL, with 0 and
// 100,000 messages of history spread over the tasks. Each (provider, history) pair is its own
// database and server process, all up at once, and every round sends each query to each server in
// a rotating order, so load that comes and goes on a shared machine falls on every figure alike.
// The servers count their SQL statements per request. `tsx bench/p4-profile.ts` takes the
// server's share of one pair apart (CPU by origin, allocations).
import { deployMigrations } from '../src/store/migrate.ts'
import { BOOT_PAGE_SIZE } from '../packages/client/src/task-client.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { report, type Row } from './scenario.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN, type BenchServer } from './server-process.ts'
import { PENDING_EVERY, TASKS } from './p4-handlers.ts'
import { OPERATIONS } from './p4-operations.ts'
import { median } from './support.ts'

const RUNS = Number(process.env.BENCH_RUNS ?? 30)
const WARMUP = 3
const HISTORY = (process.env.BENCH_HISTORY ?? '0,100000').split(',').map(Number)
const GOAL_WITH_WITHOUT = 1.5
const GOAL_HISTORY = 1.2

type QueryName = keyof typeof OPERATIONS
/**
 * Tasks per request: the SDK reads its following pages 500 at a time at most (the `first`
 * maximum) and boots with BOOT_PAGE_SIZE (300): boot with every summary field and first: 500
 * is over the operation cost limit and refused.
 */
const FIRST: Record<QueryName, number> = { tasks: TASKS, boot: BOOT_PAGE_SIZE }
/** What each row says it sends: the operation and, briefly, its selection. */
const SENDS: Record<QueryName, string> = {
  tasks: `ClientTasksPage: tasks(first: ${FIRST.tasks}) { edges { node { …TaskRowFields } } pageInfo }`,
  boot: `ClientBoot: boot { feedCursor tasks(first: ${FIRST.boot}) { edges { node { …TaskRowFields } } pageInfo } }`,
}
type Edge = { node: { title: string; statusSummary?: { pendingAction: string | null } } }

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
    body: JSON.stringify({
      query: summary ? OPERATIONS[query].withSummary : OPERATIONS[query].withoutSummary,
      variables: { workspaceId: target.workspaceId, first: FIRST[query] },
    }),
  })
  const body = (await response.json()) as { errors?: unknown; data?: { tasks?: { edges: Edge[] }; boot?: { tasks: { edges: Edge[] } } } }
  const edges = body.data?.tasks?.edges ?? body.data?.boot?.tasks.edges
  if (body.errors || edges?.length !== FIRST[query]) throw new Error(`${query} failed: ${JSON.stringify(body.errors)}`)
  return edges
}

/** Tasks of the page the seed gave a pending permission (titles are `task <i>`). */
const expectedPending = (edges: Edge[]) => edges.filter((e) => Number(e.node.title.split(' ')[1]) % PENDING_EVERY === 0).length

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
    for (const query of Object.keys(OPERATIONS) as QueryName[]) {
      const edges = await post(target, query, true)
      await server.call('idle')
      const pending = edges.filter((e) => e.node.statusSummary?.pendingAction === 'PERMISSION').length
      if (pending !== expectedPending(edges) || pending === 0)
        throw new Error(`${provider}/${history}: expected ${expectedPending(edges)} pending tasks, read ${pending}`)
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
      const label = `${SENDS[query]}, ${target.provider}, ${target.history.toLocaleString('en')} messages`
      rows.push({
        metric: `${label}: with statusSummary { …StatusSummaryFields } (${fewest(withS.statements)} statements; ${fewest(without.statements)} without)`,
        value: median(withS.ms),
        unit: 'ms',
        baseline: { label: 'the same without statusSummary', value: median(without.ms) },
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
    title: `lists: the SDK's ClientTasksPage (first: ${FIRST.tasks}) and ClientBoot (first: ${FIRST.boot}), with and without the summary selection, by history (median of ${RUNS} requests each)`,
    rows,
    notes: [
      `Both are the SDK's documents (packages/client/src/operations/queries.graphql) with their fragments; the baseline is the same document without \`statusSummary { …StatusSummaryFields }\`. ClientBoot reads BOOT_PAGE_SIZE (${FIRST.boot}) tasks as the SDK does: with every summary field, first: 500 is over the operation cost limit.`,
      'A page with its summaries is one statement: the task rows, each task’s stored summary row and whether it has an open permission/clarification request. One more reads the open requests with their session’s state and newest turn, only when some task of the page has one (one in ten here); a session whose newest turn does not decide alone (an agent relaunch, an empty reservation) adds a read of its few newest turns. History does not enter the read path, so the statement count is the same at every history size.',
      'What remains of the with/without ratio is the size of what is asked: the summary selection makes the response ~3.8× larger (312 KB against 83 KB for 500 tasks) and adds ~23 fields per task. Queries run through graphql-jit (src/server/plugins/use-jit-queries.ts); of the server’s extra time, garbage collection, encoding and serializing the larger response, execution and the summaries’ columns and open-request reads each take a part (`tsx bench/p4-profile.ts` splits it by origin), and the client’s parsing of the larger response is in the wall time too.',
    ],
  })
} finally {
  for (const target of targets) await target.server.stop()
  cluster.stop()
}
