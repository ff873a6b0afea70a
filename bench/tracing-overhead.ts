// `npx tsx bench/tracing-overhead.ts [p3] [p5]`: what tracing costs. Runs each
// scenario twice in a row, off then on (BENCH_TRACING, the server exporting every span to a sink
// process: bench/otlp-sink.ts), and prints every figure of both runs with on ÷ off. Goal: within
// 5 % (throughput ≥ 0.95×, latency and CPU ≤ 1.05×). Short runs unless the environment says
// otherwise (BENCH_CHUNKS, BENCH_RUNS, BENCH_P5_* as for the scenarios themselves);
// BENCH_TRACING_PROTOCOL picks the encoding (http/protobuf by default).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatValue, type ScenarioResult } from './scenario.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const PROTOCOL = process.env.BENCH_TRACING_PROTOCOL ?? 'http/protobuf'
const GOAL = 0.05

const SCENARIOS: Record<string, { file: string; env: Record<string, string> }> = {
  p3: { file: 'p3-ingest.ts', env: { BENCH_CHUNKS: '100000', BENCH_WARMUP_CHUNKS: '20000', BENCH_RUNS: '3' } },
  p5: { file: 'p5-fanout.ts', env: { BENCH_P5_SUBSCRIBERS: '1000', BENCH_P5_ROUNDS: '5', BENCH_P5_PROFILE_ROUNDS: '0', BENCH_P5_VARIANTS: 'sdk-resume', BENCH_P5_WORKERS: '2' } },
}

function run(file: string, env: Record<string, string>, tracing: boolean): ScenarioResult {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-tracing-bench-'))
  const resultFile = path.join(dir, 'result.json')
  const { BENCH_TRACING: _unset, ...inherited } = process.env
  const child = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'bench', file)], {
    cwd: root,
    env: { ...env, ...inherited, BENCH_RESULT_FILE: resultFile, ...(tracing && { BENCH_TRACING: PROTOCOL }) },
    stdio: 'inherit',
  })
  if (child.status !== 0) throw new Error(`${file} (tracing ${tracing ? 'on' : 'off'}) exited with ${child.status}`)
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

const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(SCENARIOS)
const lines = ['| scenario | metric | tracing off | tracing on | on ÷ off | within 5 % |', '|---|---|---|---|---|---|']
for (const id of chosen) {
  const scenario = SCENARIOS[id]
  if (!scenario) throw new Error(`unknown scenario ${id} (p3 or p5)`)
  // BENCH_TRACING_FIRST=on runs the traced one first: whichever runs second meets a warmer (or busier) machine.
  const onFirst = process.env.BENCH_TRACING_FIRST === 'on'
  const first = run(scenario.file, scenario.env, onFirst)
  const second = run(scenario.file, scenario.env, !onFirst)
  const [off, on] = onFirst ? [second, first] : [first, second]
  for (const row of off.rows) {
    const traced = on.rows.find((r) => r.metric === row.metric)
    if (!traced) continue
    const ratio = row.value === 0 ? NaN : traced.value / row.value
    const better = direction(row.unit)
    const within = better === 'higher' ? ratio >= 1 - GOAL : better === 'lower' ? ratio <= 1 + GOAL : undefined
    lines.push(`| ${id} | ${row.metric} | ${formatValue(row.value, row.unit)} | ${formatValue(traced.value, traced.unit)} | ${ratio.toFixed(3)}× | ${within === undefined ? '' : within ? 'yes' : '**no**'} |`)
  }
}
console.info(`\ntracing overhead (${PROTOCOL}, every span exported to a local sink):`)
console.info(lines.join('\n'))
