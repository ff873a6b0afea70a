// bench/real-agents.ts's settings, its results (module state, so a run cut off by its deadline
// still prints what it has) and their markdown table.
import os from 'node:os'
import { median } from './support.ts'

export const SAMPLES = Number(process.env.BENCH_AGENTS_SAMPLES ?? 5)
/** One wait (a mutation, an agent's answer, a subscriber's event): real agents take seconds, tens on a loaded machine. */
export const WAIT_MS = 90_000
/** A 1 MiB answer through a real agent's CLI can take a while longer. */
export const STREAM_WAIT_MS = 240_000
export const RUN_DEADLINE_MS = Number(process.env.BENCH_AGENTS_DEADLINE_MS ?? 25 * 60_000)
export const OUT = process.env.BENCH_AGENTS_OUT ?? '/tmp/real-agents-bench.md'

export type AgentName = 'mock' | 'claude' | 'codex'
/** BENCH_AGENTS=mock,codex runs a subset (the mock, the baseline, is always kept). */
export const AGENTS: AgentName[] = (['mock', 'claude', 'codex'] as const).filter((a) => a === 'mock' || !process.env.BENCH_AGENTS || process.env.BENCH_AGENTS.split(',').includes(a))
export const LABEL: Record<AgentName, string> = { mock: 'mock (built-in)', claude: 'Claude Code (claude-agent-acp)', codex: 'Codex (codex-acp)' }

// --- Results (module state, so a run cut off by its deadline still prints what it has) ---

export interface Timing {
  answerMs: number
  waitingMs: number
  answeredState: string
}
export const starts: Record<AgentName, Timing[]> = { mock: [], claude: [], codex: [] }
export const resumes: Record<AgentName, (Timing & { replayDropped: number })[]> = { mock: [], claude: [], codex: [] }
export const failures: Record<AgentName, string[]> = { mock: [], claude: [], codex: [] }
/** From stopSession's answer until the agent's process group is gone. */
export const exits: Record<AgentName, number[]> = { mock: [], claude: [], codex: [] }

export interface StreamResult {
  bytes: number
  codePoints: number
  deltas: number
  appends: number
  messages: number
  wireFrames: number
  wireBytes: number
  gaps: number
  rebuiltExact: boolean
  storedExact: boolean
  lastAppendMs: number
  turnEndMs: number
  firstAppendMs: number
  note?: string
}
export const streams: Partial<Record<AgentName, StreamResult | { error: string }>> = {}

export interface StoryResult {
  events: number
  firstRevision: number
  lastRevision: number
  sequence: string[]
  fileWritten: boolean
  permissionOptions: string
  chosen: string
  toolMessages: number
  note?: string
}
export const stories: Partial<Record<AgentName, StoryResult | { error: string }>> = {}
export const oddities: string[] = []

export const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1))
export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 300)
/** Warnings and errors the server logged during the run (read into the table). */
export const warnings: { level: number; action?: string; msg?: string }[] = []
export const loadAtStart = os.loadavg().map((l) => l.toFixed(1)).join(' ')

export function render(): string {
  const out: string[] = []
  const when = new Date().toISOString()
  out.push(`## Real agents through the server (bench/real-agents.ts)`, '')
  out.push(
    `${when}, Node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), load average ${loadAtStart} at the start and ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} at the end; SQLite; ${SAMPLES} samples per agent after one warm-up round, agents interleaved.`,
    '',
  )

  out.push('### 1. Start and resume as the page sees them', '')
  out.push(
    'Wall time of the mutation until it answers with the session WAITING_FOR_INPUT (ms: median, min–max). Resume: of a stopped (CANCELLED) session with one answered prompt. ÷ mock: median over the mock\'s median, same run. Every sample starts once the previous agent\'s process group is gone.',
    '',
  )
  out.push('| agent | start median | start min–max | start ÷ mock | resume median | resume min–max | resume ÷ mock | replayed updates dropped per resume (median) | agent gone after stopSession answered (median, max) |')
  out.push('|---|---|---|---|---|---|---|---|---|')
  const startBase = median(starts.mock.map((t) => t.waitingMs))
  const resumeBase = median(resumes.mock.map((t) => t.waitingMs))
  for (const a of AGENTS) {
    const s = starts[a].map((t) => t.waitingMs)
    const r = resumes[a].map((t) => t.waitingMs)
    const range = (v: number[]) => (v.length ? `${ms(Math.min(...v))}–${ms(Math.max(...v))}` : '—')
    const med = (v: number[]) => (v.length ? `${ms(median(v))} (n=${v.length})` : '—')
    const times = (v: number[], base: number) => (v.length && base > 0 && a !== 'mock' ? `${(median(v) / base).toFixed(1)}×` : a === 'mock' ? '1×' : '—')
    const dropped = resumes[a].map((t) => t.replayDropped)
    const gone = exits[a]
    out.push(
      `| ${LABEL[a]} | ${med(s)} | ${range(s)} | ${times(s, startBase)} | ${med(r)} | ${range(r)} | ${times(r, resumeBase)} | ${dropped.length ? median(dropped) : '—'} | ${gone.length ? `${ms(median(gone))}, ${ms(Math.max(...gone))}` : '—'} |`,
    )
  }
  for (const a of AGENTS) if (failures[a].length) out.push('', `- ${LABEL[a]} failed ${failures[a].length}×: ${failures[a].join(' / ')}`)
  out.push('')

  out.push('### 2. A ~1 MiB streamed answer, rebuilt from a graphql-ws subscriber\'s appends', '')
  out.push('The AgentStream subscription (MessageAdded whole, then MessageUpdated appends), rebuilt as the harness\'s follow()/rebuilt() does; compared with the text the provider sent and with the stored message. Times from sending the prompt. Wire: every frame and byte the subscriber\'s socket received in the turn.', '')
  out.push('| agent | answer bytes (UTF-8) | code points | provider deltas | appends received | wire frames | wire bytes | gaps | rebuilt = sent | stored = sent | first append | last append | turn ended | last append ÷ mock |')
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  const base = streams.mock && 'bytes' in streams.mock ? streams.mock.lastAppendMs : NaN
  for (const a of AGENTS) {
    const s = streams[a]
    if (!s) continue
    if ('error' in s) {
      out.push(`| ${LABEL[a]} | failed: ${s.error.replaceAll('|', '/')} |||||||||||||`)
      continue
    }
    const yes = (b: boolean) => (b ? 'yes' : '**NO**')
    out.push(
      `| ${LABEL[a]} | ${s.bytes} | ${s.codePoints} | ${s.deltas} | ${s.appends}${s.messages > 1 ? ` (${s.messages} messages)` : ''} | ${s.wireFrames} | ${s.wireBytes} | ${s.gaps} | ${yes(s.rebuiltExact)} | ${yes(s.storedExact)} | ${ms(s.firstAppendMs)} ms | ${ms(s.lastAppendMs)} ms | ${ms(s.turnEndMs)} ms | ${a === 'mock' ? '1×' : Number.isFinite(base) ? `${(s.lastAppendMs / base).toFixed(1)}×` : '—'} |`,
    )
  }
  for (const a of AGENTS) {
    const s = streams[a]
    if (s && 'note' in s && s.note) out.push('', `- ${LABEL[a]}: ${s.note}`)
  }
  out.push('')

  out.push('### 3. Summary revisions for one turn: a file write that asks permission, allowed, then a text answer', '')
  out.push('TaskStatusSummaryUpdated events a workspaceEvents subscriber received for the task from sending the prompt until the turn ended and the projector was idle (and the subscriber had the current revision).', '')
  out.push('| agent | summary events | revisions | file written | options offered (chosen) | tool-call messages |')
  out.push('|---|---|---|---|---|---|')
  for (const a of AGENTS) {
    const s = stories[a]
    if (!s) continue
    if ('error' in s) {
      out.push(`| ${LABEL[a]} | failed: ${s.error.replaceAll('|', '/')} |||||`)
      continue
    }
    out.push(`| ${LABEL[a]} | ${s.events} | ${s.firstRevision}→${s.lastRevision} | ${s.fileWritten ? 'yes' : '**no**'} | ${s.permissionOptions} (${s.chosen}) | ${s.toolMessages} |`)
  }
  for (const a of AGENTS) {
    const s = stories[a]
    if (!s || 'error' in s) continue
    out.push('', `${LABEL[a]}, revision by revision (primary state · activity · pendingAction — fields changed):`, '')
    for (const line of s.sequence) out.push(`- ${line}`)
    if (s.note) out.push(`- note: ${s.note}`)
  }
  out.push('')
  const warned = warnings.map((w) => `${w.level >= 50 ? 'error' : 'warn'} ${w.action ?? ''} ${w.msg ?? ''}`.trim())
  if (oddities.length || warned.length) {
    out.push('### Seen on the way', '')
    for (const o of oddities) out.push(`- ${o}`)
    const counts = new Map<string, number>()
    for (const w of warned) counts.set(w, (counts.get(w) ?? 0) + 1)
    for (const [w, n] of counts) out.push(`- server log: ${w}${n > 1 ? ` (${n}×)` : ''}`)
    out.push('')
  }
  return out.join('\n')
}
