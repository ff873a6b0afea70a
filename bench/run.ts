// `npm run bench`: every scenario of docs/performance.md, one child process each (a scenario that
// hangs or fails is reported as such; the others still run), then bench/results/latest.json, the
// markdown table on stdout, docs/performance.md and the P5 plot. `npm run bench -- P2 P5` runs some.
// `npm run bench -- --short` (or BENCH_SHORT=1; CI runs it) runs each scenario once at toy sizes
// with no goal judged (bench/scenario.ts) and writes nothing into the clone: it only proves every
// scenario still runs, so one that rots fails CI instead of the next full run.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { TABLE_HEAD, markdownRows, type ScenarioResult } from './scenario.ts'
import { latencyPlot } from './plot.ts'
import { performanceDoc } from './performance-doc.ts'
import { runScenario, type ScenarioRun } from './scenario-child.ts'

const root = fileURLToPath(new URL('..', import.meta.url))

export const SCENARIOS = [
  { id: 'P1', file: 'p1-switcher.ts', title: 'switcher traffic: feed only vs every session stream' },
  { id: 'P2', file: 'p2-control-lane.ts', title: 'control lane under a throttled reader' },
  { id: 'P3', file: 'p3-ingest.ts', title: 'ingest: mock agent → coalescer → store' },
  { id: 'P4', file: 'p4-lists.ts', title: 'lists: tasks(first: 500) and boot' },
  { id: 'P5', file: 'p5-fanout.ts', title: 'fan-out of one change: a task edit, a permission raised or cleared' },
  { id: 'P6', file: 'p6-heap.ts', title: 'heap per connection and per subscription cycle' },
  { id: 'P7', file: 'p7-instances.ts', title: 'two instances over Redis vs one' },
  { id: 'P8', file: 'p8-resume.ts', title: 'reconnect of a 10,000-task switcher' },
  { id: 'P9', file: 'p9-revocation.ts', title: 'revocation on open sockets across two instances' },
  { id: 'P10', file: 'p10-embedded-load.ts', title: 'the embedded server (SQLite) under its own streams' },
  { id: 'P11', file: 'p11-task-orders.ts', title: 'tasks(orderBy: NEEDS_ATTENTION) vs LAST_ACTIVITY at 10,000 tasks' },
  { id: 'P12', file: 'p12-git-observation.ts', title: 'Git observations: processes and CPU per observation, monitor idle polling' },
  { id: 'P13', file: 'p13-append-cost.ts', title: 'append cost by message length; stopSession of multi-MB streams (PostgreSQL)' },
  { id: 'P14', file: 'p14-summary-change.ts', title: 'server CPU per summary change from real triggers, one subscriber' },
] as const

const args = process.argv.slice(2)
/** Children read BENCH_SHORT themselves, so the flag only has to reach their environment. */
if (args.includes('--short')) process.env.BENCH_SHORT = '1'
const SHORT = process.env.BENCH_SHORT === '1'

/** A scenario past this is stopped and reported as such (every one is bounded well below it; a short one runs in about a minute). */
const SCENARIO_LIMIT_MS = Number(process.env.BENCH_SCENARIO_LIMIT_MS ?? (SHORT ? 3 : 10) * 60_000)

function machine() {
  const cpus = os.cpus()
  let commit = 'unknown'
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
  } catch {
    // not a checkout
  }
  return {
    date: new Date().toISOString(),
    commit,
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
  }
}

/** Why the scenario's run does not count, or undefined when it wrote a result that names it and has rows. */
function invalid(id: string, run: ScenarioRun, resultFile: string): string | undefined {
  if (run.timedOut) return `stopped after ${SCENARIO_LIMIT_MS / 1000} s`
  if (run.code !== 0) return `exited ${run.code} (its error is in its output above)`
  if (!existsSync(resultFile)) return 'exited 0 without writing its result (report() never ran)'
  const result = JSON.parse(readFileSync(resultFile, 'utf8')) as Partial<ScenarioResult>
  if (result.id !== id) return `reported as ${String(result.id)}`
  if (!result.rows?.length) return 'reported no rows'
  return undefined
}

async function main() {
  const wanted = args.filter((a) => a !== '--short').map((a) => a.toUpperCase())
  const unknown = wanted.filter((id) => !SCENARIOS.some((s) => s.id === id))
  if (unknown.length > 0) {
    console.error(`bench: no scenario ${unknown.join(', ')} (known: ${SCENARIOS.map((s) => s.id).join(' ')})`)
    process.exitCode = 2
    return
  }
  const chosen = SCENARIOS.filter((s) => wanted.length === 0 || wanted.includes(s.id))
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'tss-bench-run-'))
  const results: ScenarioResult[] = []
  const failures: { id: string; reason: string }[] = []
  const times: string[] = []
  const started = performance.now()
  for (const scenario of chosen) {
    const resultFile = path.join(tmp, `${scenario.id}.json`)
    console.info(`\n=== ${scenario.id}${SHORT ? ' (short)' : ''}: ${scenario.title}`)
    const run = await runScenario(path.join(root, 'bench', scenario.file), { cwd: root, resultFile, tmpdir: path.join(tmp, scenario.id), limitMs: SCENARIO_LIMIT_MS })
    const reason = invalid(scenario.id, run, resultFile)
    times.push(`${scenario.id} ${(run.ms / 1000).toFixed(0)} s${reason ? ' (failed)' : ''}`)
    if (reason === undefined) {
      results.push({ ...(JSON.parse(readFileSync(resultFile, 'utf8')) as ScenarioResult), ranAt: new Date().toISOString() })
      console.info(`=== ${scenario.id} took ${(run.ms / 1000).toFixed(0)} s`)
    } else {
      failures.push({ id: scenario.id, reason })
      console.error(`=== ${scenario.id} FAILED: ${reason}`)
    }
  }
  rmSync(tmp, { recursive: true, force: true, maxRetries: 3 })
  const totalSeconds = (performance.now() - started) / 1000
  if (SHORT) return shortSummary(failures, times, totalSeconds)

  // A partial run (some scenarios chosen) refreshes those rows of the last full run.
  const latestFile = path.join(root, 'bench', 'results', 'latest.json')
  const previous = existsSync(latestFile) && wanted.length > 0 ? (JSON.parse(readFileSync(latestFile, 'utf8')) as { results: ScenarioResult[] }).results : []
  const merged = SCENARIOS.map((s) => results.find((r) => r.id === s.id) ?? previous.find((r) => r.id === s.id)).filter((r): r is ScenarioResult => r !== undefined)
  const latest = { machine: machine(), seconds: Math.round(totalSeconds), results: merged, failures }
  mkdirSync(path.dirname(latestFile), { recursive: true })
  writeFileSync(latestFile, JSON.stringify(latest, null, 2) + '\n')

  const table = [...TABLE_HEAD, ...merged.flatMap(markdownRows)].join('\n')
  console.info(`\n## npm run bench (${totalSeconds.toFixed(0)} s)\n\n${table}`)
  for (const f of failures) console.info(`${f.id}: ${f.reason}`)

  const p5 = merged.find((r) => r.id === 'P5')
  if (p5?.series) writeFileSync(path.join(root, 'docs', 'performance-p5.svg'), latencyPlot(p5.series, { title: 'P5: one summary delta to N subscribers', x: 'subscribers', y: 'delivery latency (ms)' }))
  writeFileSync(path.join(root, 'docs', 'performance.md'), performanceDoc(latest, table))
  if (failures.length > 0) process.exitCode = 1
}

/** A short run's end: its times (each scenario printed its table already), nothing written; any failure fails the run, by name. */
function shortSummary(failures: { id: string; reason: string }[], times: string[], totalSeconds: number) {
  console.info(`\nnpm run bench -- --short: ${totalSeconds.toFixed(0)} s (${times.join(', ')}); no goal judged, nothing written`)
  if (failures.length === 0) return
  console.error(`\nbench --short: ${failures.length} scenario(s) broke:\n${failures.map((f) => `  ${f.id}: ${f.reason}`).join('\n')}`)
  process.exitCode = 1
}

await main()
