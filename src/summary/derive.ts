import { activeError } from './active-error.ts'
import { gitTotals } from './git-totals.ts'
import type { SessionObservation, SummaryInputs } from './inputs.ts'
import { taskPending } from './pending.ts'
import { pullRequestSummary } from './pull-requests.ts'
import type { SummaryPayload } from './types.ts'

/** Sessions that can still be working count towards activity and subagents. */
const LIVE = new Set(['STARTING', 'RUNNING', 'WAITING_FOR_INPUT', 'IDLE'])

/** The flagged primary session; without a flag, the newest session. */
function primaryOf(sessions: SessionObservation[]): SessionObservation | undefined {
  const byNewest = [...sessions].sort(
    (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1),
  )
  return byNewest.find((s) => s.isPrimary) ?? byNewest[0]
}

/**
 * The primary session's mark of a turn the server cut off (restart, takeover), as the session
 * row holds it: the next dispatched turn (a queued prompt too) or resumeSession clears it there,
 * and another primary session (the deleted one's successor) carries its own.
 */
function interruption(primary: SessionObservation | undefined): SummaryPayload['interruption'] {
  const cut = primary?.interruption
  return primary && cut ? { sessionId: primary.id, reason: cut.reason, at: cut.at.toISOString() } : null
}

/** GENERATING while a turn is in flight (RUNNING); BACKGROUND while only subagents or background work run. */
function foregroundActivity(sessions: SessionObservation[]): SummaryPayload['foregroundActivity'] {
  if (sessions.some((s) => s.state === 'RUNNING')) return 'GENERATING'
  if (sessions.some((s) => LIVE.has(s.state) && (s.activeSubagentCount > 0 || s.backgroundWork))) return 'BACKGROUND'
  return null
}

const maxTime = (dates: (Date | null)[]) =>
  dates.reduce<Date | null>((max, d) => (d && (!max || d.getTime() > max.getTime()) ? d : max), null)

/**
 * Task creation, persisted task mutations, user prompts and conversational turns move activity;
 * nothing else does. The maximum with the stored value keeps replay and repair from moving it back.
 */
function lastActivityAt(inputs: SummaryInputs): string | null {
  const at = maxTime([
    inputs.task.createdAt,
    inputs.task.updatedAt,
    inputs.task.lastActivityAt,
    inputs.activity.lastUserPromptAt,
    inputs.activity.lastConversationalTurnAt,
    inputs.previousLastActivityAt,
  ])
  return at ? at.toISOString() : null
}

/**
 * The version of these rules. Bump it with any change that could derive a different summary
 * from the same observations: stored rows of an older version are rebuilt on their next read
 * (reads otherwise trust the stored row and reconcile only its pending field).
 */
export const SUMMARY_DERIVATION_VERSION = 6

/** Authoritative observations in, the bounded summary out. No IO, no clock. */
export function deriveSummary(inputs: SummaryInputs): SummaryPayload {
  const sessions = inputs.sessions
  const primary = primaryOf(sessions)
  const pending = taskPending(sessions)
  return {
    lastActivityAt: lastActivityAt(inputs),
    primarySession: primary ? { id: primary.id, state: primary.state } : null,
    foregroundActivity: foregroundActivity(sessions),
    activeSubagentCount: sessions
      .filter((s) => LIVE.has(s.state))
      .reduce((sum, s) => sum + Math.max(0, s.activeSubagentCount), 0),
    pendingAction: pending.pendingAction,
    activeError: activeError(sessions, inputs.launchError),
    git: gitTotals(inputs.git),
    pullRequest: pullRequestSummary(inputs.pullRequests),
    waitingSince: pending.waitingSince,
    queuedPromptCount: sessions.reduce((sum, s) => sum + Math.max(0, s.queuedPrompts), 0),
    interruption: interruption(primary),
  }
}
