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
