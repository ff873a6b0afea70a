// `npm run bench`: every scenario of docs/performance.md, one child process each (a scenario that
// hangs or fails is reported as such; the others still run), then bench/results/latest.json, the
// markdown table on stdout, docs/performance.md and the P5 plot. `npm run bench -- P2 P5` runs some.
import { spawn } from 'node:child_process'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { TABLE_HEAD, markdownRows, type ScenarioResult } from './scenario.ts'
import { latencyPlot } from './plot.ts'
import { performanceDoc } from './performance-doc.ts'

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
] as const

/** A scenario past this is stopped and reported as such (every one is bounded well below it). */
const SCENARIO_LIMIT_MS = Number(process.env.BENCH_SCENARIO_LIMIT_MS ?? 10 * 60_000)

async function runScenario(file: string, resultFile: string): Promise<{ code: number | null; ms: number; timedOut: boolean }> {
  const started = performance.now()
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', file)], {
    cwd: root,
    env: { ...process.env, BENCH_RESULT_FILE: resultFile },
    stdio: 'inherit',
    detached: true,
  })
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // already gone
    }
  }, SCENARIO_LIMIT_MS)
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  clearTimeout(timer)
  // Its servers, agents and client processes share its group: nothing outlives the scenario.
  try {
    process.kill(-child.pid!, 'SIGKILL')
  } catch {
    // already gone
  }
  return { code, ms: performance.now() - started, timedOut }
}

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

async function main() {
  const wanted = process.argv.slice(2).map((a) => a.toUpperCase())
  const chosen = SCENARIOS.filter((s) => wanted.length === 0 || wanted.includes(s.id))
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'tss-bench-run-'))
  const results: ScenarioResult[] = []
  const failures: { id: string; reason: string }[] = []
  const started = performance.now()
  for (const scenario of chosen) {
    const resultFile = path.join(tmp, `${scenario.id}.json`)
    console.info(`\n=== ${scenario.id}: ${scenario.title}`)
    const run = await runScenario(scenario.file, resultFile)
    if (run.code === 0 && existsSync(resultFile)) {
      results.push({ ...(JSON.parse(readFileSync(resultFile, 'utf8')) as ScenarioResult), ranAt: new Date().toISOString() })
      console.info(`=== ${scenario.id} took ${(run.ms / 1000).toFixed(0)} s`)
    } else failures.push({ id: scenario.id, reason: run.timedOut ? `stopped after ${SCENARIO_LIMIT_MS / 1000} s` : `exited ${run.code}` })
  }
  rmSync(tmp, { recursive: true, force: true })
  const totalSeconds = (performance.now() - started) / 1000

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

await main()
