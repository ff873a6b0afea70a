// P11: tasks(orderBy: NEEDS_ATTENTION) against the default LAST_ACTIVITY at 10,000 tasks, on SQLite
// and PostgreSQL. The request is the SDK's ClientTasksPage (its row fields and every summary
// field) with an orderBy variable, first: 500, as a GraphQL client sorting its switcher by
// attention sends it: the first page and a deep one (after the cursor of the 5,000th task). Each
// provider is its own server process; every round sends each request to each server in a
// rotating order, so load that comes and goes falls on every figure alike. The servers count their
// SQL statements per request.
import { deployMigrations } from '../src/store/migrate.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { report, scaled, type Row } from './scenario.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN, type BenchServer } from './server-process.ts'
import { FAILED_EVERY, PENDING_EVERY, TASKS } from './p11-handlers.ts'
import { median } from './support.ts'
import { QUERY } from './p11-operations.ts'

const RUNS = Number(process.env.BENCH_RUNS ?? scaled(30, 1))
// Short (BENCH_SHORT=1): 1,000 tasks (p11-handlers.ts), so pages of 100 and the deep one after the 500th.
const FIRST = scaled(500, 100)
const DEEP = scaled(5_000, 500)
const GOAL = 1.2
const ORDERS = ['LAST_ACTIVITY', 'NEEDS_ATTENTION'] as const
type Order = (typeof ORDERS)[number]

type Edge = { node: { title: string; statusSummary: { pendingAction: string | null; activeError: unknown; waitingSince: string | null } | null } }
type Page = { edges: Edge[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }

interface Target {
  provider: string
  server: BenchServer
  workspaceId: string
  deepCursor: Record<Order, string>
  samples: Map<string, { ms: number[]; statements: number[] }>
}

async function page(target: Target, orderBy: Order, after: string | null): Promise<Page> {
  const response = await fetch(`${target.server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
    body: JSON.stringify({ query: QUERY, variables: { workspaceId: target.workspaceId, first: FIRST, after, orderBy } }),
  })
  const body = (await response.json()) as { errors?: unknown; data?: { tasks: Page } }
  if (body.errors || body.data?.tasks.edges.length !== FIRST) throw new Error(`${orderBy} failed: ${JSON.stringify(body.errors)}`)
  return body.data.tasks
}

/** Walks to the cursor of the DEEP-th task, and checks the attention order on the way. */
async function deepCursor(target: Target, orderBy: Order): Promise<string> {
  let after: string | null = null
  const pending: number[] = []
  for (let seen = 0; seen < DEEP; seen += FIRST) {
    const { edges, pageInfo } = await page(target, orderBy, after)
    if (orderBy === 'NEEDS_ATTENTION') pending.push(...edges.map((e) => (e.node.statusSummary?.pendingAction ? 1 : 0)))
    after = pageInfo.endCursor!
  }
  if (orderBy === 'NEEDS_ATTENTION') {
    const waiting = TASKS / PENDING_EVERY
    // Every task waiting on its user comes first, then the rest.
    if (pending.slice(0, waiting).some((p) => p !== 1) || pending.slice(waiting).some((p) => p !== 0))
      throw new Error(`${target.provider}: NEEDS_ATTENTION does not list the ${waiting} waiting tasks first`)
  }
  return after!
}

async function startTarget(provider: string, databaseUrl: string | undefined): Promise<Target> {
  // The lease heartbeat would add statements at random to the counted requests.
  const server = await startBenchServer({
    env: { ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), SESSION_LEASE_MS: '3600000' },
    handlers: new URL('./p11-handlers.ts', import.meta.url),
    start: { countStatements: true, skipMigrations: provider === 'PostgreSQL' },
  })
  const workspaceId = await server.call<string>('seed', { analyze: provider === 'PostgreSQL' })
  const target: Target = { provider, server, workspaceId, deepCursor: {} as Record<Order, string>, samples: new Map() }
  for (const order of ORDERS) target.deepCursor[order] = await deepCursor(target, order)
  const ranks = await server.call<Record<string, number>>('summaryRanks', { workspaceId })
  process.stderr.write(`P11 ${provider}: attention ranks ${JSON.stringify(ranks)}\n`)
  return target
}

const fewest = (xs: number[]) => Math.min(...xs)

const cluster = await startPostgresCluster()
const targets: Target[] = []
try {
  await cluster.query('CREATE DATABASE p11')
  await deployMigrations('postgres', cluster.url('p11'))
  targets.push(...(await Promise.all([startTarget('SQLite', undefined), startTarget('PostgreSQL', cluster.url('p11'))])))

  const slots = targets.flatMap((target) => ORDERS.flatMap((order) => (['first', 'deep'] as const).map((depth) => ({ target, order, depth }))))
  for (let round = 0; round < RUNS; round++)
    for (let i = 0; i < slots.length; i++) {
      const { target, order, depth } = slots[(i + round * 3) % slots.length]!
      await target.server.call('statements')
      const started = performance.now()
      await page(target, order, depth === 'first' ? null : target.deepCursor[order])
      const ms = performance.now() - started
      const key = `${order}/${depth}`
      if (!target.samples.has(key)) target.samples.set(key, { ms: [], statements: [] })
      target.samples.get(key)!.ms.push(ms)
      target.samples.get(key)!.statements.push(await target.server.call<number>('statements'))
    }

  const rows: Row[] = []
  for (const target of targets)
    for (const depth of ['first', 'deep'] as const) {
      const attention = target.samples.get(`NEEDS_ATTENTION/${depth}`)!
      const activity = target.samples.get(`LAST_ACTIVITY/${depth}`)!
      const where = depth === 'first' ? 'first page' : `page after the ${DEEP.toLocaleString('en')}th task`
      rows.push({
        metric: `tasks(first: ${FIRST}, orderBy: NEEDS_ATTENTION) with the SDK's row and summary fields, ${where}, ${TASKS.toLocaleString('en')} tasks, ${target.provider} (${fewest(attention.statements)} statements; ${fewest(activity.statements)} for LAST_ACTIVITY)`,
        value: median(attention.ms),
        unit: 'ms',
        baseline: { label: 'the same with orderBy: LAST_ACTIVITY', value: median(activity.ms) },
        goal: `≤ ${GOAL}×`,
        met: median(attention.ms) / median(activity.ms) <= GOAL,
      })
    }
  report({
    id: 'P11',
    title: `task orders: tasks(first: ${FIRST}, orderBy: NEEDS_ATTENTION) vs LAST_ACTIVITY at ${TASKS.toLocaleString('en')} tasks (median of ${RUNS} requests each)`,
    rows,
    notes: [
      `The request is the SDK's ClientTasksPage (packages/client/src/operations/queries.graphql: TaskRowFields with every summary field) with an \`orderBy\` variable. The workspace holds ${TASKS.toLocaleString('en')} tasks: one in ${PENDING_EVERY} waits on a permission, one in ${FAILED_EVERY} (of the rest) failed with an error, the others are idle; the bench checks that NEEDS_ATTENTION lists the waiting ones first.`,
      'NEEDS_ATTENTION reads the stored summary columns (attentionRank, attentionKey) along the index TaskStatusSummary(workspaceId, attentionRank, attentionKey, taskId DESC), never the history; LAST_ACTIVITY reads Task(workspaceId, lastActivityAt, id). The deep page continues from a cursor (a keyset, not an offset).',
    ],
  })
} finally {
  for (const target of targets) await target.server.stop()
  cluster.stop()
}
