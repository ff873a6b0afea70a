// `npx tsx bench/tracing-overhead.ts [p3] [p5]`: what tracing costs. Runs each scenario several
// times with tracing off and on (BENCH_TRACING: the server exports every span to a sink process,
// bench/otlp-sink.ts), alternating which goes first, and prints each figure's median both ways
// and on ÷ off. Goal: within 5 % (throughput ≥ 0.95×, latency and CPU ≤ 1.05×).
//
// Two runs minutes apart meet different machines (a 2-core box drifts by more than 5 %), so every
// figure is also read against the baseline its own run measured beside it (P3: raw NDJSON
// decoding; P5: a raw ws broadcast to the same clients): "on ÷ off, same-run baseline" divides the
// two runs' ratios, which cancels what the machine did between them. That column is judged.
//
// BENCH_TRACING_PAIRS: runs per mode (3). BENCH_TRACING_BASE=<checkout>: also runs the scenario
// from another checkout (one without the tracing code) as "before", to show what tracing costs
// when it is off. BENCH_TRACING_PROTOCOL picks the encoding (http/protobuf by default). Short
// runs unless the environment says otherwise (BENCH_CHUNKS, BENCH_P5_* as for the scenarios).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatValue, type Row, type ScenarioResult } from './scenario.ts'
import { median } from './support.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PROTOCOL = process.env.BENCH_TRACING_PROTOCOL ?? 'http/protobuf'
const PAIRS = Number(process.env.BENCH_TRACING_PAIRS ?? 3)
const BASE = process.env.BENCH_TRACING_BASE ? path.resolve(process.env.BENCH_TRACING_BASE) : undefined
const GOAL = 0.05

/**
 * `judged`: the rows held to the goal. P3's server figures: its throughput against the pipeline
 * measured right after each of its turns (its other baseline, JSON.parse in one process, moves by
 * a third between runs), and the server's CPU time per chunk; its row of that pipeline alone runs
 * no server code: it shows how much two runs differ when nothing changed.
 */
const SCENARIOS: Record<string, { file: string; env: Record<string, string>; judged: RegExp }> = {
  p3: { file: 'p3-ingest.ts', env: { BENCH_CHUNKS: '100000', BENCH_WARMUP_CHUNKS: '20000', BENCH_RUNS: '3' }, judged: /against the pipeline without the server|server CPU per chunk/ },
  p5: { file: 'p5-fanout.ts', env: { BENCH_P5_SUBSCRIBERS: '1000', BENCH_P5_ROUNDS: '10', BENCH_P5_PROFILE_ROUNDS: '0', BENCH_P5_VARIANTS: 'sdk-resume', BENCH_P5_WORKERS: '2' }, judged: /./ },
}

type Mode = 'before' | 'off' | 'on'

function run(file: string, env: Record<string, string>, mode: Mode): ScenarioResult {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-tracing-bench-'))
  const resultFile = path.join(dir, 'result.json')
  const root = mode === 'before' ? BASE! : ROOT
  const { BENCH_TRACING: _unset, ...inherited } = process.env
  console.info(`\n${file}: ${mode === 'before' ? `before (${root})` : `tracing ${mode}`}`)
  const child = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'bench', file)], {
    cwd: root,
    env: { ...env, ...inherited, BENCH_RESULT_FILE: resultFile, ...(mode === 'on' && { BENCH_TRACING: PROTOCOL }) },
    stdio: 'inherit',
  })
  if (child.status !== 0) throw new Error(`${file} (${mode}) exited with ${child.status}`)
  const result = JSON.parse(readFileSync(resultFile, 'utf8')) as ScenarioResult
  rmSync(dir, { recursive: true, force: true })
  return result
}

/** Whether a bigger value is better, from the unit: rates are, times and CPU are not; counts are not judged. */
function direction(unit: string): 'higher' | 'lower' | undefined {
  if (/\/s$/.test(unit)) return 'higher'
  if (/^(ms|µs|s|us)$/.test(unit) || /cpu/i.test(unit)) return 'lower'
  return undefined
}

function within(ratio: number, unit: string): string {
  const better = direction(unit)
  if (better === undefined || Number.isNaN(ratio)) return ''
  return (better === 'higher' ? ratio >= 1 - GOAL : ratio <= 1 + GOAL) ? 'yes' : '**no**'
}

/** One metric's runs in one mode: its values, and each against its own run's baseline. */
function figures(runs: ScenarioResult[], metric: string): { value: number; relative?: number; unit: string } | undefined {
  const rows = runs.map((r) => r.rows.find((row) => row.metric === metric)).filter((row): row is Row => row !== undefined)
  if (rows.length === 0) return undefined
  const relatives = rows.filter((row) => row.baseline && row.baseline.value > 0).map((row) => row.value / row.baseline!.value)
  return { value: median(rows.map((row) => row.value)), relative: relatives.length === rows.length ? median(relatives) : undefined, unit: rows[0]!.unit }
}

const modes: Mode[] = BASE ? ['before', 'off', 'on'] : ['off', 'on']
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(SCENARIOS)
const header = BASE
  ? ['| scenario | metric | before | off | on | off ÷ before (same-run baseline) | on ÷ off | on ÷ off (same-run baseline) | within 5 % |', '|---|---|---|---|---|---|---|---|---|']
  : ['| scenario | metric | off | on | on ÷ off | on ÷ off (same-run baseline) | within 5 % |', '|---|---|---|---|---|---|---|']
const lines = [...header]
for (const id of chosen) {
  const scenario = SCENARIOS[id]
  if (!scenario) throw new Error(`unknown scenario ${id} (p3 or p5)`)
  const runs: Record<Mode, ScenarioResult[]> = { before: [], off: [], on: [] }
  // Each round runs every mode once, the order rotated: whichever runs later meets a warmer (or busier) machine.
  for (let round = 0; round < PAIRS; round++) {
    for (let i = 0; i < modes.length; i++) {
      const mode = modes[(i + round) % modes.length]!
      runs[mode].push(run(scenario.file, scenario.env, mode))
    }
  }
  for (const { metric } of runs.off[0]!.rows) {
    const off = figures(runs.off, metric)
    const on = figures(runs.on, metric)
    if (!off || !on) continue
    const ratio = off.value === 0 ? NaN : on.value / off.value
    const relative = on.relative !== undefined && off.relative ? on.relative / off.relative : undefined
    const judged = relative ?? ratio
    const cells = [`${formatValue(off.value, off.unit)}`, `${formatValue(on.value, on.unit)}`, `${ratio.toFixed(3)}×`, relative === undefined ? '' : `${relative.toFixed(3)}×`, scenario.judged.test(metric) ? within(judged, off.unit) : '']
    if (BASE) {
      const before = figures(runs.before, metric)
      const offVsBefore = before?.relative && off.relative !== undefined ? `${(off.relative / before.relative).toFixed(3)}×` : ''
      cells.unshift(before ? formatValue(before.value, before.unit) : '')
      cells.splice(3, 0, offVsBefore)
    }
    lines.push(`| ${id} | ${metric} | ${cells.join(' | ')} |`)
  }
}
console.info(`\ntracing overhead (${PROTOCOL}, every span exported to a local sink; medians of ${PAIRS} runs per mode):`)
console.info(lines.join('\n'))
