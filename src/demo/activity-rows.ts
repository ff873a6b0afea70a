import type { DemoTask } from './seed.ts'

/** What a row shows, as the demo reads it from its summary (`busy`: starting, or no summary yet). */
export type RowState = 'generating' | 'permission' | 'clarification' | 'error' | 'idle' | 'busy'

/** The states the demo keeps a share of on screen. */
export const SHOWN_KINDS = ['generating', 'permission', 'clarification', 'error'] as const
export type ShownKind = (typeof SHOWN_KINDS)[number]

export interface Summary {
  taskId: string
  foregroundActivity: 'GENERATING' | 'BACKGROUND' | null
  pendingAction: 'PERMISSION' | 'CLARIFICATION' | null
  activeError: { stamp: string } | null
  primarySession: { id: string; state: string } | null
}

/** What the activity remembers of one session's row (its own bookkeeping; the truth is the API). */
export interface Track {
  task: DemoTask & { sessionId: string }
  state: RowState
  /** When the row entered its current state, and how long the demo lets it stay there before acting. */
  since: number
  holdMs: number
  /** Something was sent and may not show yet: the row is left alone until it leaves `sentFrom` (or until then). */
  sentUntil: number
  sentFrom?: RowState
  /** The state the last script leads to: the row counts as that until it gets there (or ends idle). */
  expect?: ShownKind
  /** The last script wrote files: observe Git once the row is idle again. */
  wrote: boolean
  scripts: number
}

/** How many rows of each shown state the demo aims for, and how many requests / errors it always leaves. */
export interface Mix {
  targets: Record<ShownKind, number>
  /** At least this many requests / errors stay on screen (unless one has been shown for longHoldMs). */
  keep: Record<'permission' | 'clarification' | 'error', number>
  longHoldMs: number
}

/** One track per task with a session: tasks without one stay idle. */
export function tracksOf(tasks: readonly DemoTask[]): Track[] {
  return tasks
    .filter((t): t is DemoTask & { sessionId: string } => t.sessionId !== null)
    .map((task) => ({ task, state: 'idle', since: Date.now(), holdMs: 0, sentUntil: 0, wrote: false, scripts: 0 }))
}

export function mixFor(rows: number, intervalMs: number): Mix {
  const targets: Record<ShownKind, number> = {
    generating: Math.max(1, Math.round(rows * 0.22)),
    permission: Math.max(1, Math.round(rows * 0.17)),
    clarification: Math.max(1, Math.round(rows * 0.12)),
    error: Math.max(1, Math.round(rows * 0.12)),
  }
  const keep = {
    permission: Math.max(1, Math.floor(targets.permission / 2)),
    clarification: Math.max(1, Math.floor(targets.clarification / 2)),
    error: Math.max(1, Math.floor(targets.error / 2)),
  }
  return { targets, keep, longHoldMs: intervalMs * 40 }
}

export function classify(summary: Summary | undefined): RowState {
  if (!summary) return 'busy'
  if (summary.pendingAction === 'PERMISSION') return 'permission'
  if (summary.pendingAction === 'CLARIFICATION') return 'clarification'
  const state = summary.primarySession?.state
  if (state === 'RUNNING') return 'generating'
  if (summary.activeError) return 'error'
  if (state === 'STARTING' || state === 'CREATED') return 'busy'
  return 'idle'
}

/**
 * Brings each track up to what its summary shows: a row entering a state gets a new hold
 * (`holdFor()`, drawn in track order); what was sent and has shown frees the row; an expected
 * state reached (or an idle row past its wait) is no longer expected.
 */
export function observe(tracks: readonly Track[], summaries: readonly Summary[], now: number, holdFor: () => number): void {
  const byTask = new Map(summaries.map((s) => [s.taskId, s]))
  for (const track of tracks) {
    const state = classify(byTask.get(track.task.id))
    if (state !== track.state) {
      track.state = state
      track.since = now
      track.holdMs = holdFor()
    }
    // What was sent has shown: the row may be acted on again.
    if (track.sentFrom !== undefined && state !== track.sentFrom) {
      track.sentUntil = Math.min(track.sentUntil, now)
      track.sentFrom = undefined
    }
    if (track.expect && (state === track.expect || (state === 'idle' && track.sentUntil <= now))) track.expect = undefined
  }
}
