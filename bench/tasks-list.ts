// `npm run bench:tasks`: tasks(first: 500) with every task's statusSummary against the same list
// without (the baseline), on SQLite and PostgreSQL, with 0, 10,000 and 100,000 messages of history
// spread over the tasks. The read path trusts stored summaries and reconciles only pendingAction,
// so neither the summaries nor the history should show in the figures: targets (issue 12)
// with/without ≤ 2×, and each history figure within 1.2× of the same provider's 0-history figure.
// Each (provider, history) pair is its own database and server, all up at once, and every round
// sends each query to each server in a rotating order: on a shared machine, load that comes and
// goes then falls on every figure alike instead of on whichever was measured at that moment.
// Statements per request are counted with onQuery.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer, type RunningServer } from '../src/server/app.ts'
import { deployMigrations } from '../src/store/migrate.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'

const TASKS = 500
const RUNS = Number(process.env.BENCH_RUNS ?? 30)
const WARMUP = 3
const HISTORY = [0, 10_000, 100_000]
/** Every tenth task has a running session waiting on a permission: pending reconciliation reads them. */
const PENDING_EVERY = 10
const MESSAGES_PER_TURN = 20
const CHUNK = 1000
const TARGET_WITH_WITHOUT = 2
const TARGET_HISTORY = 1.2
const adminToken = 'bench-admin-token-0123456789'

const SUMMARY = `statusSummary { id taskId revision updatedAt lastActivityAt primarySession { id state } foregroundActivity
  activeSubagentCount pendingAction activeError { sessionId taskRepositoryId stamp occurredAt preview category recoveryActions }
  git { additions deletions changedFiles ahead behind comparisonUnavailable }
  pullRequest { count openCount aggregateState representative { repository number url } autoFixEnabled autoMergeEnabled } }`

interface Row {
  provider: string
  history: number
  baseline: Sample
  withSummaries: Sample
}
interface Sample {
  median: number
  statements: string
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Background work (projections) can only add statements, so the fewest seen is the request's own. */
function statementFigure(counts: number[]): string {
  const min = Math.min(...counts)
  const max = Math.max(...counts)
  return min === max ? String(min) : `${min} (max ${max})`
}

type Query = 'baseline' | 'withSummaries'

interface Target {
  provider: string
  history: number
  server: RunningServer
  queries: Record<Query, string>
  statements: number
  times: Record<Query, number[]>
  counts: Record<Query, number[]>
}

/**
 * A server on its own database: 500 tasks, each with a session; every tenth session running with
 * a PENDING permission request in its newest turn; then `history` messages in completed turns
 * older than those, round-robin over the sessions. Everything goes straight into the tables (no
 * source events, no summaries): the first read derives every task's summary, as it would after
 * an upgrade, and later reads must be flat whatever lies underneath.
 */
async function startTarget(provider: string, history: number, databaseUrl: string, skipMigrations: boolean): Promise<Target> {
  const target = { provider, history, statements: 0 } as Target
  target.server = await startServer(
    // The lease heartbeat would add statements at random to the counted requests.
    loadConfig({ PORT: '0', DATABASE_URL: databaseUrl, ADMIN_TOKEN: adminToken, SESSION_LEASE_MS: '3600000' }),
    { logger: pino({ level: 'silent' }), onQuery: () => target.statements++, skipMigrations },
  )
  const { db } = target.server.store
  const admin = await db.user.findFirstOrThrow({ where: { isAdmin: true } })
  const workspace = await createWorkspace(target.server.store, 'bench', admin.id)
  const step = await db.workflowStep.findFirstOrThrow({ where: { workspaceId: workspace.id }, orderBy: { position: 'asc' } })
  const now = Date.now()
  const historyStart = now - 30 * 86_400_000
  const tasks = Array.from({ length: TASKS }, (_, i) => {
    const at = new Date(now - 3_600_000 + i * 1000)
    return { id: randomUUID(), workspaceId: workspace.id, workflowStepId: step.id, title: `task ${i}`, createdAt: at, updatedAt: at, lastActivityAt: at, feedSequence: i + 1 }
  })
  await db.task.createMany({ data: tasks })
  await db.workspace.update({ where: { id: workspace.id }, data: { feedSequence: TASKS } })
  const sessions = tasks.map((t, i) => ({
    id: randomUUID(),
    taskId: t.id,
    agentProfile: 'mock',
    state: i % PENDING_EVERY === 0 ? 'RUNNING' : 'IDLE',
    isPrimary: true,
    createdAt: new Date(historyStart - 1000),
    updatedAt: t.createdAt,
  }))
  await db.session.createMany({ data: sessions })
  const pendingTurns = sessions.filter((s) => s.state === 'RUNNING').map((s) => ({ id: randomUUID(), sessionId: s.id, taskId: s.taskId, startedAt: new Date(now - 60_000) }))
  await db.turn.createMany({ data: pendingTurns })
  await db.message.createMany({
    data: pendingTurns.flatMap((t, i) => [
      { id: `p-${i}`, sessionId: t.sessionId, taskId: t.taskId, turnId: t.id, author: 'USER', kind: 'MESSAGE', content: 'go', createdAt: t.startedAt, updatedAt: t.startedAt },
      {
        id: `perm-${i}`,
        sessionId: t.sessionId,
        taskId: t.taskId,
        turnId: t.id,
        author: 'AGENT',
        kind: 'PERMISSION_REQUEST',
        status: 'PENDING',
        pendingId: `perm-${i}`,
        content: 'May I run the tests?',
        createdAt: t.startedAt,
        updatedAt: t.startedAt,
      },
    ]),
  })

  for (let done = 0; done < history; done += CHUNK) {
    const turns: { id: string; sessionId: string; taskId: string; startedAt: Date; completedAt: Date; stopReason: string }[] = []
    const messages: { id: string; sessionId: string; taskId: string; turnId: string; author: string; kind: string; status: string | null; content: string; createdAt: Date; updatedAt: Date }[] = []
    for (let k = done; k < Math.min(history, done + CHUNK); k++) {
      const turnNumber = Math.floor(k / MESSAGES_PER_TURN)
      const session = sessions[turnNumber % sessions.length]!
      const turnId = `ht-${turnNumber}`
      const at = new Date(historyStart + k * 1000)
      const position = k % MESSAGES_PER_TURN
      if (position === 0)
        turns.push({ id: turnId, sessionId: session.id, taskId: session.taskId, startedAt: at, completedAt: new Date(at.getTime() + MESSAGES_PER_TURN * 1000), stopReason: 'end_turn' })
      const kind = position === 0 ? 'MESSAGE' : ['REASONING', 'TOOL_CALL', 'MESSAGE'][position % 3]!
      messages.push({
        id: `h-${k}`,
        sessionId: session.id,
        taskId: session.taskId,
        turnId,
        author: position === 0 ? 'USER' : 'AGENT',
        kind,
        status: kind === 'TOOL_CALL' ? 'completed' : null,
        content: `history ${k} `.padEnd(300, 'lorem ipsum dolor sit amet '),
        createdAt: at,
        updatedAt: at,
      })
    }
    if (turns.length) await db.turn.createMany({ data: turns })
    await db.message.createMany({ data: messages })
  }

  const selection = (summary: boolean) => `{ tasks(workspaceId: "${workspace.id}", first: ${TASKS}) { edges { node { id title workflowStepId ${summary ? SUMMARY : ''} } } } }`
  target.queries = { baseline: selection(false), withSummaries: selection(true) }
  target.times = { baseline: [], withSummaries: [] }
  target.counts = { baseline: [], withSummaries: [] }
  // The first read derives and stores every summary; the warm-up reads must then find them all, pending included.
  for (let i = 0; i < WARMUP; i++) {
    const edges = await post(target, 'withSummaries')
    await target.server.projector.idle()
    const pending = edges.filter((e) => e.node.statusSummary?.pendingAction === 'PERMISSION').length
    if (pending !== TASKS / PENDING_EVERY) throw new Error(`${provider}/${history}: expected ${TASKS / PENDING_EVERY} pending tasks, read ${pending}`)
    await post(target, 'baseline')
  }
  const rows = await db.taskStatusSummary.count({ where: { workspaceId: workspace.id } })
  if (rows !== TASKS) throw new Error(`${provider}/${history}: ${rows} summary rows, expected ${TASKS}`)
  console.info(`  ${provider}, ${history} messages of history: ready`)
  return target
}

type Edge = { node: { statusSummary?: { pendingAction: string | null } } }

async function post(target: Target, query: Query): Promise<Edge[]> {
  const response = await fetch(`${target.server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({ query: target.queries[query] }),
  })
  const body = (await response.json()) as { errors?: unknown; data?: { tasks: { edges: Edge[] } } }
  if (body.errors || body.data?.tasks.edges.length !== TASKS) throw new Error(`tasks query failed: ${JSON.stringify(body.errors)}`)
  return body.data.tasks.edges
}

const wallStarted = performance.now()
const targets: Target[] = []
const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-bench-tasks-'))
const cluster = await startPostgresCluster()
try {
  for (const history of HISTORY) targets.push(await startTarget('SQLite', history, `file:${path.join(dir, `h${history}.db`)}`, false))
  for (const history of HISTORY) {
    await cluster.query(`CREATE DATABASE tss_bench_h${history}`)
    const databaseUrl = cluster.url(`tss_bench_h${history}`)
    await deployMigrations('postgres', databaseUrl)
    targets.push(await startTarget('PostgreSQL', history, databaseUrl, true))
  }

  const slots = targets.flatMap((target) => (['baseline', 'withSummaries'] as const).map((query) => ({ target, query })))
  const measureStarted = performance.now()
  for (let round = 0; round < RUNS; round++) {
    for (let i = 0; i < slots.length; i++) {
      const { target, query } = slots[(i + round * 5) % slots.length]!
      target.statements = 0
      const started = performance.now()
      await post(target, query)
      target.times[query].push(performance.now() - started)
      target.counts[query].push(target.statements)
    }
  }
  const measureSeconds = (performance.now() - measureStarted) / 1000

  const rows: Row[] = targets.map((t) => ({
    provider: t.provider,
    history: t.history,
    baseline: { median: median(t.times.baseline), statements: statementFigure(t.counts.baseline) },
    withSummaries: { median: median(t.times.withSummaries), statements: statementFigure(t.counts.withSummaries) },
  }))
  const verdict = (value: number, target: number) => `${value.toFixed(2)}x ${value <= target ? 'meets' : 'misses'}`
  console.info(
    `\ntasks(first: ${TASKS}) over HTTP, median of ${RUNS} requests per figure, in ${RUNS} rotating rounds over all ${slots.length} (database, query) pairs` +
      ` (${measureSeconds.toFixed(0)} s; ${((performance.now() - wallStarted) / 1000).toFixed(0)} s with set-up).` +
      ` Every task has a session, ${TASKS / PENDING_EVERY} a pending permission.`,
  )
  console.info(
    [
      'provider'.padEnd(10),
      'history'.padStart(8),
      'baseline ms'.padStart(12),
      'with ms'.padStart(8),
      `with/without (≤ ${TARGET_WITH_WITHOUT}x)`.padStart(22),
      `vs 0-history (≤ ${TARGET_HISTORY}x)`.padStart(23),
      'stmts baseline'.padStart(15),
      'stmts with'.padStart(11),
    ].join(' '),
  )
  for (const row of rows) {
    const zero = rows.find((r) => r.provider === row.provider && r.history === 0)!
    console.info(
      [
        row.provider.padEnd(10),
        String(row.history).padStart(8),
        row.baseline.median.toFixed(1).padStart(12),
        row.withSummaries.median.toFixed(1).padStart(8),
        verdict(row.withSummaries.median / row.baseline.median, TARGET_WITH_WITHOUT).padStart(22),
        verdict(row.withSummaries.median / zero.withSummaries.median, TARGET_HISTORY).padStart(23),
        row.baseline.statements.padStart(15),
        row.withSummaries.statements.padStart(11),
      ].join(' '),
    )
  }
} finally {
  for (const target of targets) await target.server.close()
  cluster.stop()
  rmSync(dir, { recursive: true, force: true })
}
