// P4: the list read paths as the task switcher sends them, the SDK's own documents
// (packages/client/src/operations/queries.graphql): ClientTasksPage with first: 500 and ClientBoot with the
// SDK's page size, each with every task's statusSummary (…StatusSummaryFields) against the same
// document with that selection removed (the baseline), on SQLite and on PostgreSQL, with 0 and
// 100,000 messages of history spread over the tasks. Each (provider, history) pair is its own
// database and server process, all up at once, and every round sends each query to each server in
// a rotating order, so load that comes and goes on a shared machine falls on every figure alike.
// The servers count their SQL statements per request. Beside each server runs its floor
// (bench/p4-floor.ts): the same rows read by the same statement and written as hand-built JSON,
// timed in the same rotation, so each list is also reported as a ratio to what its bytes cost
// without GraphQL. `tsx bench/p4-profile.ts` takes the server's share of one pair apart (CPU by
// origin, allocations). BENCH_SHORT=1: a few tasks, one round, no goal judged (CI's smoke run).
import { deployMigrations } from '../src/store/migrate.ts'
import { BOOT_PAGE_SIZE } from '../packages/client/src/task-client.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { report, type Row } from './scenario.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN, type BenchServer } from './server-process.ts'
import { PENDING_EVERY, TASKS } from './p4-handlers.ts'
import { OPERATIONS } from './p4-operations.ts'
import { median } from './support.ts'

const SHORT = process.env.BENCH_SHORT === '1'
const RUNS = SHORT ? 1 : Number(process.env.BENCH_RUNS ?? 30)
const WARMUP = SHORT ? 1 : 3
const HISTORY = (process.env.BENCH_HISTORY ?? (SHORT ? '0,200' : '0,100000')).split(',').map(Number)
/** Tasks seeded per database: the page of `tasks` reads them all. */
const SEEDED = SHORT ? 20 : TASKS
const GOAL_WITH_WITHOUT = 1.5
const GOAL_HISTORY = 1.2

type QueryName = keyof typeof OPERATIONS
/**
 * Tasks per request: the SDK reads its following pages 500 at a time at most (the `first`
 * maximum) and boots with BOOT_PAGE_SIZE (300): boot with every summary field and first: 500
 * is over the operation cost limit and refused.
 */
const FIRST: Record<QueryName, number> = { tasks: SEEDED, boot: SHORT ? 10 : BOOT_PAGE_SIZE }
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
  /** The hand-built floor's URL (bench/p4-floor.ts). */
  floorUrl: string
  samples: Map<string, { ms: number[]; statements: number[] }>
  /** Response bytes of each query and variant. */
  bytes: Map<string, number>
}

/** What one slot sends: the GraphQL document with or without summaries, or the floor of either. */
type Variant = 'with' | 'without' | 'floor with' | 'floor without'
const VARIANTS: Variant[] = ['with', 'without', 'floor with', 'floor without']

type Body = { errors?: unknown; data?: { tasks?: { edges: Edge[] }; boot?: { tasks: { edges: Edge[] } } } }

/** One request as a client makes it: sent, read whole and parsed. */
async function post(target: Target, query: QueryName, variant: Variant): Promise<{ edges: Edge[]; text: string }> {
  const summary = variant === 'with' || variant === 'floor with'
  const floor = variant.startsWith('floor')
  const response = floor
    ? await fetch(target.floorUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, summary, workspaceId: target.workspaceId, first: FIRST[query] }),
      })
    : await fetch(`${target.server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
        body: JSON.stringify({
          query: summary ? OPERATIONS[query].withSummary : OPERATIONS[query].withoutSummary,
          variables: { workspaceId: target.workspaceId, first: FIRST[query] },
        }),
      })
  const text = await response.text()
  const body = JSON.parse(text) as Body
  const edges = body.data?.tasks?.edges ?? body.data?.boot?.tasks.edges
  if (body.errors || edges?.length !== FIRST[query]) throw new Error(`${query} (${variant}) failed: ${body.errors ? JSON.stringify(body.errors) : text.slice(0, 500)}`)
  return { edges, text }
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
  const workspaceId = await server.call<string>('seed', { history, tasks: SEEDED })
  const floorUrl = await server.call<string>('floor')
  const target: Target = { provider, history, server, workspaceId, floorUrl, samples: new Map(), bytes: new Map() }
  // The first read derives and stores every summary; the warm-up reads must then find them all, pending included.
  for (let i = 0; i < WARMUP; i++)
    for (const query of Object.keys(OPERATIONS) as QueryName[]) {
      const { edges } = await post(target, query, 'with')
      await server.call('idle')
      const pending = edges.filter((e) => e.node.statusSummary?.pendingAction === 'PERMISSION').length
      if (pending !== expectedPending(edges) || pending === 0)
        throw new Error(`${provider}/${history}: expected ${expectedPending(edges)} pending tasks, read ${pending}`)
      await post(target, query, 'without')
    }
  const rows = await server.call<number>('summaryRows', { workspaceId })
  if (rows !== SEEDED) throw new Error(`${provider}/${history}: ${rows} summary rows, expected ${SEEDED}`)
  // The floor writes the very bytes the server answers, or its ratio would compare different work.
  for (const query of Object.keys(OPERATIONS) as QueryName[])
    for (const summary of [true, false]) {
      const served = (await post(target, query, summary ? 'with' : 'without')).text
      const floor = (await post(target, query, summary ? 'floor with' : 'floor without')).text
      if (served !== floor) {
        const at = [...served].findIndex((c, i) => c !== floor[i])
        throw new Error(`${provider}/${history} ${query}: the floor differs from the response at ${at}: ${served.slice(at - 80, at + 80)} / ${floor.slice(at - 80, at + 80)}`)
      }
      target.bytes.set(`${query}/${summary}`, Buffer.byteLength(served))
    }
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

  const slots = targets.flatMap((target) => (['tasks', 'boot'] as const).flatMap((query) => VARIANTS.map((variant) => ({ target, query, variant }))))
  for (let round = 0; round < RUNS; round++)
    for (let i = 0; i < slots.length; i++) {
      const { target, query, variant } = slots[(i + round * 5) % slots.length]!
      await target.server.call('statements')
      const started = performance.now()
      await post(target, query, variant)
      const ms = performance.now() - started
      const key = `${query}/${variant}`
      if (!target.samples.has(key)) target.samples.set(key, { ms: [], statements: [] })
      target.samples.get(key)!.ms.push(ms)
      target.samples.get(key)!.statements.push(await target.server.call<number>('statements'))
    }

  const rows: Row[] = []
  const ms = (target: Target, query: QueryName, variant: Variant) => median(target.samples.get(`${query}/${variant}`)!.ms)
  const kb = (target: Target, query: QueryName, summary: boolean) => `${Math.round(target.bytes.get(`${query}/${summary}`)! / 1024)} KB`
  for (const query of ['tasks', 'boot'] as const)
    for (const target of targets) {
      const withS = target.samples.get(`${query}/with`)!
      const without = target.samples.get(`${query}/without`)!
      const ratio = ms(target, query, 'with') / ms(target, query, 'without')
      const label = `${SENDS[query]}, ${target.provider}, ${target.history.toLocaleString('en')} messages`
      rows.push({
        metric: `${label}: with statusSummary { …StatusSummaryFields } (${fewest(withS.statements)} statements; ${fewest(without.statements)} without)`,
        value: ms(target, query, 'with'),
        unit: 'ms',
        baseline: { label: 'the same without statusSummary', value: ms(target, query, 'without') },
        ...(SHORT ? {} : { goal: `≤ ${GOAL_WITH_WITHOUT}×`, met: ratio <= GOAL_WITH_WITHOUT }),
      })
      for (const summary of [true, false])
        rows.push({
          metric: `${label}: ${summary ? 'with' : 'without'} statusSummary (${kb(target, query, summary)}) vs its floor`,
          value: ms(target, query, summary ? 'with' : 'without'),
          unit: 'ms',
          baseline: { label: 'hand-built JSON of the same rows, bench/p4-floor.ts', value: ms(target, query, summary ? 'floor with' : 'floor without') },
        })
      // The same with/without ratio of the floor: what the summaries' bytes and columns cost with no GraphQL at all.
      rows.push({
        metric: `${label}: the floor with statusSummary vs without`,
        value: ms(target, query, 'floor with'),
        unit: 'ms',
        baseline: { label: 'the floor without statusSummary', value: ms(target, query, 'floor without') },
      })
      if (target.history > 0) {
        const zero = targets.find((t) => t.provider === target.provider && t.history === 0)!
        const zeroMs = ms(zero, query, 'with')
        rows.push({
          metric: `${label}: with summaries vs no history`,
          value: ms(target, query, 'with'),
          unit: 'ms',
          baseline: { label: 'same, 0 messages', value: zeroMs },
          ...(SHORT ? {} : { goal: `≤ ${GOAL_HISTORY}×`, met: ms(target, query, 'with') / zeroMs <= GOAL_HISTORY }),
        })
      }
    }
  report({
    id: 'P4',
    title: `lists: the SDK's ClientTasksPage (first: ${FIRST.tasks}) and ClientBoot (first: ${FIRST.boot}), with and without the summary selection, by history (median of ${RUNS} requests each)`,
    rows,
    notes: [
      `Both are the SDK's documents (packages/client/src/operations/queries.graphql) with their fragments; the baseline is the same document without \`statusSummary { …StatusSummaryFields }\`. ClientBoot reads BOOT_PAGE_SIZE (${FIRST.boot}) tasks as the SDK does: with every summary field, first: 500 is over the operation cost limit.`,
      'A page with its summaries is one statement: the task rows, each task’s stored summary row and whether it has an open permission/clarification request. One more reads the open requests with their session’s state and newest turn, only when some task of the page has one (one in ten here); a session whose newest turn does not decide alone (an agent relaunch, an empty reservation) adds a read of its few newest turns. History does not enter the read path, so the statement count is the same at every history size.',
      'Queries run through graphql-jit (src/server/plugins/use-jit-queries.ts); TaskStatusSummary’s fields are plain properties of a SummaryView (src/summary/view.ts), so the whole summary compiles inline with no resolver per field (allocation per 500-task page 10.4 → 7.2 MB). A serializer compiled per operation (fast-json-stringify) was tried and left out: it cut JSON.stringify’s share, but flattening its concatenated string when the response is encoded took the same back. `tsx bench/p4-profile.ts` splits the server’s time by origin.',
      'The floor (bench/p4-floor.ts) is the same page read by the same statement, shaped by hand and JSON.stringify’d on a bare node:http route beside the server, checked byte for byte against the server’s response before timing. Its own with/without ratio is what the summaries’ bytes and columns cost with no GraphQL at all: the response is ~3.3× larger (331 KB against 102 KB for 500 tasks), and the summary columns, the payloads’ parsing, the write and the client’s parse grow with it. The list’s ratio to its floor is what this server adds above that.',
    ],
  })
} finally {
  for (const target of targets) await target.server.stop()
  cluster.stop()
}
