// What every `npm run bench` scenario reports: rows of figures, each beside the baseline measured
// in the same run and the goal it is held to. A scenario is a script of its own (`tsx bench/pN-….ts`)
// that prints its table; under `bench/run.ts` it also writes its result where BENCH_RESULT_FILE says.
import { writeFileSync } from 'node:fs'

export interface Row {
  /** What is measured, e.g. "p99 response, lanes". */
  metric: string
  value: number
  unit: string
  /** The same-run baseline this row is compared to. */
  baseline?: { label: string; value: number }
  /** How the row is judged, in words ("≤ 50 ms and ≤ 2× idle"). */
  goal?: string
  /** Whether the goal was met; absent when the row is informational. */
  met?: boolean
}

export interface ScenarioResult {
  id: string
  title: string
  rows: Row[]
  /** What limits these numbers, for docs/performance.md. */
  notes?: string[]
  /** When the orchestrator collected it (a partial run keeps the other scenarios' earlier rows). */
  ranAt?: string
  /** Scenario-specific series (P5's latency curve for the SVG). */
  series?: Record<string, Array<{ x: number; y: number }>>
}

export const ratio = (value: number, baseline: number) => (baseline === 0 ? Infinity : value / baseline)

export function formatValue(value: number, unit: string): string {
  const digits = Number.isInteger(value) || Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2
  return `${value.toFixed(digits)} ${unit}`.trim()
}

export function markdownRows(result: ScenarioResult): string[] {
  return result.rows.map((r) => {
    const baseline = r.baseline ? `${formatValue(r.baseline.value, r.unit)} (${r.baseline.label})` : ''
    const times = r.baseline ? `${ratio(r.value, r.baseline.value).toFixed(2)}×` : ''
    const verdict = r.met === undefined ? '' : r.met ? 'met' : '**missed**'
    return `| ${result.id} | ${r.metric} | ${formatValue(r.value, r.unit)} | ${baseline} | ${times} | ${r.goal ?? ''} | ${verdict} |`
  })
}

export const TABLE_HEAD = ['| id | metric | value | baseline (same run) | ÷ baseline | goal | verdict |', '|---|---|---|---|---|---|---|']

/** Prints the scenario's table and hands the result to the orchestrator when one runs it. */
export function report(result: ScenarioResult): void {
  console.info(`\n${result.id}: ${result.title}`)
  console.info([...TABLE_HEAD, ...markdownRows(result)].join('\n'))
  for (const note of result.notes ?? []) console.info(`  note: ${note}`)
  const file = process.env.BENCH_RESULT_FILE
  if (file) writeFileSync(file, JSON.stringify(result, null, 2))
}
