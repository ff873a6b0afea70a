// What every `npm run bench` scenario reports: rows of figures, each beside the baseline measured
// in the same run and the goal it is held to. A scenario is a script of its own (`tsx bench/pN-….ts`)
// that prints its table; under `bench/run.ts` it also writes its result where BENCH_RESULT_FILE says.
import { writeFileSync } from 'node:fs'

/**
 * BENCH_SHORT=1 (`npm run bench -- --short`, run by CI): every scenario once, at a few hundred
 * subscribers, one round and small data, only to prove it still runs end to end; its figures are
 * too small to mean anything, so report() judges no goal. The env var is the contract: each
 * scenario reads it (directly or through SHORT / scaled) to pick its short sizes.
 */
export const SHORT = process.env.BENCH_SHORT === '1'

/** `full`, or `short` under BENCH_SHORT=1; a scenario's own env knob, read before this, still wins. */
export const scaled = <T>(full: T, short: T): T => (SHORT ? short : full)

/** What a short run's goal column says instead of a verdict. */
export const NOT_JUDGED = 'not judged (short)'

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

/**
 * A short run's result: each goal kept in words but marked unjudged and its verdict dropped, so no
 * figure from a toy-sized run can read as met or missed.
 */
export function unjudged(result: ScenarioResult): ScenarioResult {
  return {
    ...result,
    title: `${result.title} [short]`,
    rows: result.rows.map(({ met: _met, ...row }) => (row.goal === undefined ? row : { ...row, goal: `${row.goal}: ${NOT_JUDGED}` })),
  }
}

/** Prints the scenario's table and hands the result to the orchestrator when one runs it. */
export function report(full: ScenarioResult): void {
  const result = SHORT ? unjudged(full) : full
  console.info(`\n${result.id}: ${result.title}`)
  console.info([...TABLE_HEAD, ...markdownRows(result)].join('\n'))
  for (const note of result.notes ?? []) console.info(`  note: ${note}`)
  const file = process.env.BENCH_RESULT_FILE
  if (file) writeFileSync(file, JSON.stringify(result, null, 2))
}
