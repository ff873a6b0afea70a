// P14 a summary change at a row's price (issue 46, item 2): the server's CPU per summary revision
// from real triggers, with one subscriber on the workspace feed (the SDK's ClientWorkspaceEvents):
// - permission raised: the mock agent (a real ACP child process) asks session/request_permission
//   in its turn (pendingAction PERMISSION);
// - permission answered: the SDK's ClientRespondToPermission mutation over HTTP (pendingAction clears);
// - turn end: the agent answers its prompt (end_turn), the turn completes (foregroundActivity clears);
// - task edit: the updateTask mutation over HTTP (TaskUpserted, then the summary's new revision).
// Each is measured in a window of its own: the server's user + system CPU (process.cpuUsage in the
// server) from just before the trigger until the subscriber has the change and the projector is
// idle, less the same run's idle CPU over the window's duration (idle windows taken the same way,
// inside a turn whose agent sleeps). The agent's triggers come a fixed pause after the previous
// step, so their windows open shortly before them. A second server process of the same database
// kind, with Prisma's query events on (which cost CPU of their own), lists each trigger's statements.
import { deployMigrations } from '../src/store/migrate.ts'
import { startPostgresCluster, type PostgresCluster } from '../test/support/postgres-cluster.ts'
import { report, type Row } from './scenario.ts'
import type { ProfileSummary } from './cpu-profile.ts'
import { median } from './support.ts'
import { AGENT_PAUSE_MS, LEAD_MS, rounds, startTarget, type TriggerId } from './p14-target.ts'

const SHORT = process.env.BENCH_SHORT === '1'
const ROUNDS = Number(process.env.BENCH_P14_ROUNDS ?? (SHORT ? 1 : 20))
/** Rounds of the statement-listing server (its statements are the same every round). */
const STATEMENT_ROUNDS = SHORT ? 1 : 3
const DATABASES = (process.env.BENCH_P14_DATABASES ?? (SHORT ? 'sqlite' : 'sqlite,postgres')).split(',')
/** BENCH_P14_PROFILE=1: extra rounds under the CPU profiler, their top self time in the notes (no reported figure includes them); BENCH_P14_PROFILE_FILE=<file> keeps the whole profile (the last database's). */
const PROFILE = process.env.BENCH_P14_PROFILE === '1'
const GOAL_MS = 2

const TRIGGERS: Record<TriggerId, string> = {
  raise: 'an agent raising a permission (mock agent, session/request_permission)',
  answer: 'the answer clearing it (ClientRespondToPermission)',
  'turn-end': 'a turn ending (the agent answers end_turn)',
  'task-edit': 'a task edit (updateTask)',
}

/** A statement as listed: whitespace folded, long ones cut. */
const statementText = (sql: string) => {
  const one = sql.replace(/\s+/g, ' ').trim()
  return one.length > 160 ? `${one.slice(0, 157)}…` : one
}

interface Measured {
  perChange: Map<TriggerId, { cpuMs: number; revisions: number; windows: number; idleMs: number }>
  idleRate: number
  statements: Map<TriggerId, string[]>
  profile?: ProfileSummary
  skipped: number
  /** CPU of projector.project alone per summary change (no trigger), in ms. */
  projectionMs: number
}

async function measureDatabase(label: string, databaseUrl: string | undefined): Promise<Measured> {
  const cpuTarget = await startTarget(databaseUrl, false)
  let profile: ProfileSummary | undefined
  let projectionMs = NaN
  try {
    await rounds(cpuTarget, ROUNDS)
    const all = [...cpuTarget.windows.values()].flat()
    await cpuTarget.idleWindows(Math.max(3, Math.min(ROUNDS, 10)), median(all.map((w) => w.ms)))
    projectionMs = await cpuTarget.server.call<number>('projectionCpu', { taskId: cpuTarget.fixture.taskId, count: Math.max(5, ROUNDS * 2) })
    console.info(`  ${label} projection alone: ${projectionMs.toFixed(2)} ms CPU per summary change`)
    if (PROFILE) {
      await cpuTarget.server.call('profileStart')
      await rounds(cpuTarget, Math.max(5, ROUNDS / 2))
      profile = await cpuTarget.server.call<ProfileSummary>('profileStop')
      for (const f of profile.top) console.info(`  profile ${(100 * f.share).toFixed(1)} % ${f.ms.toFixed(0)} ms ${f.name}`)
      for (const f of profile.buckets) console.info(`  bucket ${(100 * f.share).toFixed(1)} % ${f.name}`)
    }
  } finally {
    await cpuTarget.client.dispose()
    await cpuTarget.server.stop()
  }
  const idleRate = cpuTarget.idle.reduce((s, w) => s + w.cpuUs, 0) / 1000 / cpuTarget.idle.reduce((s, w) => s + w.ms, 0)
  const perChange = new Map<TriggerId, { cpuMs: number; revisions: number; windows: number; idleMs: number }>()
  for (const [id, ws] of cpuTarget.windows) {
    const ms = ws.reduce((s, w) => s + w.ms, 0)
    const cpu = ws.reduce((s, w) => s + w.cpuUs, 0) / 1000
    const revisions = ws.reduce((s, w) => s + w.revisions, 0)
    perChange.set(id, { cpuMs: (cpu - idleRate * ms) / Math.max(revisions, 1), revisions: revisions / ws.length, windows: ws.length, idleMs: (idleRate * ms) / ws.length })
    console.info(`  ${label} ${id}: ${((cpu - idleRate * ms) / Math.max(revisions, 1)).toFixed(2)} ms CPU per summary change (${(revisions / ws.length).toFixed(1)} revisions per window, ${(ms / ws.length).toFixed(0)} ms windows)`)
  }
  const statementTarget = await startTarget(databaseUrl, true)
  const statements = new Map<TriggerId, string[]>()
  try {
    await rounds(statementTarget, STATEMENT_ROUNDS)
    for (const [id, ws] of statementTarget.windows) statements.set(id, ws.at(-1)!.statements.map(statementText))
  } finally {
    await statementTarget.client.dispose()
    await statementTarget.server.stop()
  }
  return { perChange, idleRate, statements, profile, skipped: cpuTarget.skipped, projectionMs }
}

const rows: Row[] = []
const notes: string[] = []
let cluster: PostgresCluster | undefined
const started = performance.now()
try {
  for (const database of DATABASES) {
    let url: string | undefined
    if (database === 'postgres') {
      cluster = await startPostgresCluster()
      await cluster.query('CREATE DATABASE p14')
      url = cluster.url('p14')
      await deployMigrations('postgres', url)
    } else if (database !== 'sqlite') throw new Error(`unknown P14 database ${database}`)
    const label = database === 'postgres' ? 'PostgreSQL' : 'SQLite'
    const m = await measureDatabase(label, url)
    for (const [id, c] of m.perChange)
      rows.push({
        metric: `server CPU per summary change, ${TRIGGERS[id]}, ${label}, 1 subscriber`,
        value: c.cpuMs,
        unit: 'ms',
        // The same run's projection with no trigger: what the trigger's own work adds shows beside it.
        baseline: { label: 'the projection alone, same run', value: m.projectionMs },
        ...(!SHORT && { goal: `≤ ${GOAL_MS} ms`, met: c.cpuMs <= GOAL_MS }),
      })
    rows.push({ metric: `server CPU of the projection alone per summary change (derive, compare-and-update, publish; no trigger), ${label}, 1 subscriber`, value: m.projectionMs, unit: 'ms' })
    notes.push(`${label}: idle CPU ${m.idleRate.toFixed(3)} ms per ms of window; ${m.skipped} turn ends came before their window opened and were not measured (subtracted: ${[...m.perChange].map(([id, c]) => `${id} ${c.idleMs.toFixed(2)} ms per window, ${c.revisions.toFixed(1)} revisions per window`).join('; ')}).`)
    for (const [id, list] of m.statements) {
      const counts = new Map<string, number>()
      for (const s of list) counts.set(s, (counts.get(s) ?? 0) + 1)
      notes.push(`${label}, ${TRIGGERS[id]}: ${list.length} statements: ${[...counts].map(([s, n]) => `${n > 1 ? `${n}× ` : ''}${s}`).join(' | ')}`)
    }
    if (m.profile) notes.push(`${label} CPU profile, top self time: ${m.profile.top.map((f) => `${f.name} ${(100 * f.share).toFixed(1)} %`).join('; ')}.`)
    if (m.profile) notes.push(`${label} CPU profile by bucket: ${m.profile.buckets.map((f) => `${f.name} ${(100 * f.share).toFixed(1)} %`).join('; ')}.`)
  }
} finally {
  await cluster?.stop()
}

report({
  id: 'P14',
  title: 'server CPU per summary change (permission raised and answered, turn end, task edit; 1 subscriber)',
  rows,
  notes: [
    `Each trigger in a window of its own: the server's CPU (process.cpuUsage, user + system) from just before it until the subscriber (the SDK's ClientWorkspaceEvents) has the change and the projector is idle, less the idle CPU of the same run over the window's duration (idle windows of the triggers' median length, taken the same way inside a turn whose agent sleeps), divided by the summary revisions the window published. Everything the server did for the change counts: the agent's ACP message or the mutation, the source writes, the projection, the delivery. ${ROUNDS} rounds after one of warm-up; the agent's triggers come ${AGENT_PAUSE_MS} ms after its previous step and their windows open ${LEAD_MS} ms before.`,
    `Statements: from a second server process of the same kind with Prisma's query events on (their own CPU is kept out of the figures), the last of ${STATEMENT_ROUNDS} rounds; BEGIN / COMMIT are not query events.`,
    ...notes,
    `The run took ${((performance.now() - started) / 1000).toFixed(0)} s.`,
  ],
})
