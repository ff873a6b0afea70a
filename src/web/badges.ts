import type { StatusSummary } from '@task-status/client'

/**
 * The row's primary state icon, by the spec's task-row precedence: pending permission outranks
 * pending clarification; both outrank generating/background activity, which outranks the coarse
 * lifecycle state of the primary session. The error badge is independent of it.
 */
export type PrimaryBadge =
  | { kind: 'permission'; label: string }
  | { kind: 'clarification'; label: string }
  | { kind: 'generating'; label: string }
  | { kind: 'background'; label: string }
  | { kind: 'state'; state: string; label: string }
  | { kind: 'none'; label: string }

export interface RowBadges {
  primary: PrimaryBadge
  error: { preview: string; category: string | null } | null
  subagents: number
  git: { additions: number; deletions: number; changedFiles: number; ahead: number; behind: number; unavailable: boolean } | null
  pullRequest: { state: string; number: number | null; count: number; autoMerge: boolean; autoFix: boolean } | null
}

const stateLabels: Record<string, string> = {
  CREATED: 'Created',
  STARTING: 'Starting',
  WAITING_FOR_INPUT: 'Waiting for input',
  RUNNING: 'Running',
  IDLE: 'Idle',
  CANCELLED: 'Stopped',
  FAILED: 'Failed',
  COMPLETED: 'Completed',
}

export function primaryBadge(summary: StatusSummary | null): PrimaryBadge {
  if (!summary) return { kind: 'none', label: 'No session' }
  if (summary.pendingAction === 'PERMISSION') return { kind: 'permission', label: 'Needs permission' }
  if (summary.pendingAction === 'CLARIFICATION') return { kind: 'clarification', label: 'Has a question' }
  if (summary.foregroundActivity === 'GENERATING') return { kind: 'generating', label: 'Generating' }
  if (summary.foregroundActivity === 'BACKGROUND') return { kind: 'background', label: 'Working in background' }
  const state = summary.primarySession?.state
  if (!state) return { kind: 'none', label: 'No session' }
  return { kind: 'state', state, label: stateLabels[state] ?? state }
}

export function rowBadges(summary: StatusSummary | null): RowBadges {
  const git = summary?.git
  const pr = summary?.pullRequest
  return {
    primary: primaryBadge(summary),
    error: summary?.activeError ? { preview: summary.activeError.preview, category: summary.activeError.category ?? null } : null,
    subagents: summary?.activeSubagentCount ?? 0,
    git:
      git && (git.changedFiles > 0 || git.ahead > 0 || git.behind > 0 || git.comparisonUnavailable)
        ? {
            additions: git.additions,
            deletions: git.deletions,
            changedFiles: git.changedFiles,
            ahead: git.ahead,
            behind: git.behind,
            unavailable: git.comparisonUnavailable,
          }
        : null,
    pullRequest:
      pr && pr.count > 0
        ? {
            state: pr.aggregateState,
            number: pr.representative?.number ?? null,
            count: pr.count,
            autoMerge: pr.autoMergeEnabled,
            autoFix: pr.autoFixEnabled,
          }
        : null,
  }
}

/** How long a task has waited on its user, for its row: rounded down, in the largest unit that fits. */
export interface WaitingBadge {
  /** "waiting 5 min" */
  text: string
  /** The same for assistive technology and the tooltip: "Waiting on you for 5 minutes". */
  label: string
  since: string
}

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`

export function waitingBadge(summary: StatusSummary | null, now: number): WaitingBadge | null {
  if (!summary?.pendingAction || !summary.waitingSince) return null
  const minutes = Math.floor(Math.max(0, now - Date.parse(summary.waitingSince)) / 60_000)
  const hours = Math.floor(minutes / 60)
  const days = Math.floor(hours / 24)
  const [short, long] =
    minutes < 1 ? ['<1 min', 'less than a minute'] : hours < 1 ? [`${minutes} min`, plural(minutes, 'minute')] : days < 1 ? [`${hours} h`, plural(hours, 'hour')] : [`${days} d`, plural(days, 'day')]
  return { text: `waiting ${short}`, label: `Waiting on you for ${long}`, since: summary.waitingSince }
}

const interruptions: Record<string, { text: string; label: string }> = {
  SERVER_RESTART: { text: 'interrupted: server restart', label: 'The last turn was cut off: the server running the agent restarted' },
  OWNER_LOST: { text: 'interrupted: owner lost', label: 'The last turn was cut off: the server running the session lost it and another took over' },
}

/** The row's attention badges that do not depend on the clock: prompts waiting their turn, a turn the server cut off. */
export function attentionBadges(summary: StatusSummary | null): {
  queued: { count: number; text: string; label: string } | null
  interruption: { reason: string; text: string; label: string } | null
} {
  const count = summary?.queuedPromptCount ?? 0
  const reason = summary?.interruption?.reason
  return {
    queued: count > 0 ? { count, text: `${count} queued`, label: `${plural(count, 'prompt')} queued behind the current turn` } : null,
    interruption: reason ? { reason, ...(interruptions[reason] ?? { text: 'interrupted', label: 'The last turn was cut off by the server' }) } : null,
  }
}
