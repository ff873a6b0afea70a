// docs/performance.md as `npm run bench` leaves it: the table, the machine, and what limits each
// figure (the scenarios' own notes), so the page never disagrees with the last run.
import type { ScenarioResult } from './scenario.ts'

interface Latest {
  machine: Record<string, string | number>
  seconds: number
  results: ScenarioResult[]
  failures: { id: string; reason: string }[]
}

export function performanceDoc(latest: Latest, table: string): string {
  const m = latest.machine
  const lines = [
    '# Performance',
    '',
    'Written by `npm run bench` (bench/run.ts) from its last run; do not edit by hand. Every figure stands',
    'beside a baseline measured in the same run, on the same machine, so a ratio means more than a',
    'number. Load goes to loopback only, every loop is bounded in count and time, and each scenario',
    'runs the server in a process of its own (bench/server-process.ts), its clients elsewhere.',
    '',
    `Last run: ${m.date}, commit ${m.commit}, ${latest.seconds} s. Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}.`,
    ...ranAtLines(latest.results),
    '',
    table,
    '',
  ]
  if (latest.failures.length > 0) lines.push('Scenarios that did not finish in this run:', '', ...latest.failures.map((f) => `- ${f.id}: ${f.reason}`), '')
  lines.push('![P5: delivery latency against subscribers, beside a raw ws broadcast](performance-p5.svg)', '', '## What limits each figure', '')
  for (const r of latest.results) {
    lines.push(`### ${r.id}: ${r.title}`, '')
    for (const note of r.notes ?? []) lines.push(`- ${note}`)
    lines.push('')
  }
  lines.push('## Running it', '', '`npm run bench` runs all of them (about seventeen minutes on 2 cores); `npm run bench -- P2 P5` runs some and', 'keeps the other rows of the last full run. Results: `bench/results/latest.json`. `npm run bench -- --short`', '(BENCH_SHORT=1, run by CI) runs each scenario once at toy sizes to prove it still runs: it judges no goal and writes none of these files.', '')
  return lines.join('\n')
}

/** A partial run (`npm run bench -- P2`) says which rows are older than the last run. */
function ranAtLines(results: ScenarioResult[]): string[] {
  const days = new Map<string, string[]>()
  for (const r of results) {
    const at = r.ranAt?.slice(0, 16).replace('T', ' ') ?? 'unknown'
    days.set(at, [...(days.get(at) ?? []), r.id])
  }
  if (days.size <= 1) return []
  return ['', `Rows by the time they were measured: ${[...days].map(([at, ids]) => `${ids.join(', ')} at ${at} UTC`).join('; ')}.`]
}
