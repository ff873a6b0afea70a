/** The bounded status contract of one task, as stored (canonical JSON) and served. */

export const SESSION_STATES = [
  'CREATED',
  'STARTING',
  'RUNNING',
  'IDLE',
  'WAITING_FOR_INPUT',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
] as const
export type SessionState = (typeof SESSION_STATES)[number]

export const RECOVERY_ACTIONS = ['RETRY_DEFAULT', 'PICK_BASE_BRANCH', 'MARK_REVIEW_DONE', 'RESUME_SESSION'] as const
export type RecoveryAction = (typeof RECOVERY_ACTIONS)[number]

/** Ordered most attention-worthy first: the aggregate and the representative follow this order. */
export const PULL_REQUEST_AGGREGATE_STATES = [
  'FAILURE',
  'BLOCKED',
  'PENDING',
  'AWAITING_REVIEW',
  'READY',
  'PASSING',
  'DRAFT',
  'MERGED',
  'CLOSED',
  'NEUTRAL',
] as const
export type PullRequestAggregateState = (typeof PULL_REQUEST_AGGREGATE_STATES)[number]

export interface ActiveError {
  sessionId: string | null
  taskRepositoryId: string | null
  stamp: string
  /** ISO-8601 */
  occurredAt: string
  preview: string
  category: string | null
  recoveryActions: RecoveryAction[]
}

export interface GitTotals {
  additions: number
  deletions: number
  changedFiles: number
  ahead: number
  behind: number
  comparisonUnavailable: boolean
}

export interface PullRequestSummary {
  count: number
  openCount: number
  aggregateState: PullRequestAggregateState
  representative: { repository: string; number: number; url: string } | null
  autoFixEnabled: boolean
  autoMergeEnabled: boolean
}

/** Why the server, not the agent or the user, cut a session's latest turn off. */
export const INTERRUPTION_REASONS = ['SERVER_RESTART', 'OWNER_LOST'] as const
export type InterruptionReason = (typeof INTERRUPTION_REASONS)[number]

export interface Interruption {
  sessionId: string
  reason: InterruptionReason
  /** ISO-8601: when the server closed the turn. */
  at: string
}

/** The semantic payload: everything but revision and projection time. */
export interface SummaryPayload {
  /** ISO-8601 */
  lastActivityAt: string | null
  primarySession: { id: string; state: SessionState } | null
  foregroundActivity: 'GENERATING' | 'BACKGROUND' | null
  activeSubagentCount: number
  pendingAction: 'PERMISSION' | 'CLARIFICATION' | null
  activeError: ActiveError | null
  git: GitTotals | null
  pullRequest: PullRequestSummary | null
  /** ISO-8601: creation of the request behind pendingAction; null exactly when pendingAction is. */
  waitingSince: string | null
  /** User prompts accepted behind an open turn of their session and not yet dispatched. */
  queuedPromptCount: number
  /** The primary session's latest turn was cut off by the server. */
  interruption: Interruption | null
}

export interface StoredSummary {
  taskId: string
  workspaceId: string
  revision: number
  updatedAt: Date
  payload: SummaryPayload
}
