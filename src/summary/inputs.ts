import type { GitTotals, InterruptionReason, SessionState } from './types.ts'

/**
 * The authoritative observations one summary is derived from: plain data, loaded in batch by
 * src/projector/load-inputs.ts. Nothing here is a previous summary except `previous`, which only
 * keeps lastActivityAt monotonic.
 */
export interface SummaryInputs {
  task: {
    id: string
    workspaceId: string
    createdAt: Date
    /** Moved only by persisted task mutations. */
    updatedAt: Date
    /**
     * The task row's own monotonic activity time (creation, mutations, prompts, turns): it
     * survives the deletion of the sessions and messages that once moved it.
     */
    lastActivityAt: Date
  }
  sessions: SessionObservation[]
  launchError: LaunchErrorObservation | null
  git: GitObservation[]
  pullRequests: PullRequestObservation[]
  activity: {
    /** Newest user-authored prompt of the task. */
    lastUserPromptAt: Date | null
    /** Newest start or completion of a conversational (not lifecycle-only) turn. */
    lastConversationalTurnAt: Date | null
  }
  /** The stored summary's lastActivityAt: live and rebuilt values take the monotonic maximum. */
  previousLastActivityAt: Date | null
}

export interface TurnObservation {
  id: string
  startedAt: Date
  lifecycleOnly: boolean
  promptDispatchPending: boolean
  promptDispatchAttempted: boolean
  hasMessages: boolean
  /** Accepted behind an open turn and never dispatched: its prompt cannot have reached the agent. */
  queued: boolean
}

export interface PendingRequestObservation {
  kind: 'PERMISSION_REQUEST' | 'CLARIFICATION'
  status: string | null
  turnId: string | null
  /** When the agent raised the request. */
  createdAt: Date
}

export interface SessionObservation {
  id: string
  state: SessionState
  isPrimary: boolean
  createdAt: Date
  activeSubagentCount: number
  backgroundWork: boolean
  error: { code: string; message: string; stamp: string; occurredAt: Date } | null
  /** The stamp of the last dismissed or superseded error: that stamp cannot come back. */
  errorClearedStamp: string | null
  /**
   * The server cut a turn of this session off (restart recovery, takeover) and the user has not
   * prompted or resumed since; null otherwise.
   */
  interruption: { reason: InterruptionReason; at: Date } | null
  /** The session's newest turns, newest first (a bounded window). */
  recentTurns: TurnObservation[]
  /** The session's prompts accepted behind an open turn and not yet dispatched (a count, read with the window). */
  queuedPrompts: number
  /** Permission and clarification rows of the session that are still PENDING. */
  pendingRequests: PendingRequestObservation[]
}

export interface LaunchErrorObservation {
  taskRepositoryId: string | null
  stamp: string
  category: string | null
  message: string
  /** Raw JSON as stored; malformed metadata makes the projector ignore the record. */
  recoveryActions: string
  occurredAt: Date
  cleared: boolean
}

/** One session's latest observation of one task repository. */
export interface GitObservation extends GitTotals {
  sessionId: string
  taskRepositoryId: string
  observedAt: Date
}

export interface PullRequestObservation {
  repository: string
  number: number
  url: string
  state: string
  draft: boolean
  checks: string
  reviewDecision: string | null
  mergeableState: string | null
  autoFix: boolean
  autoMerge: boolean
}

/** What the pending rules (summary/pending.ts) read of a session: the read path loads only this. */
export type PendingSessionObservation = Pick<SessionObservation, 'state' | 'recentTurns' | 'pendingRequests'>
