import { boundRecoveryActions, CATEGORY_MAX_BYTES, PREVIEW_MAX_BYTES, truncateUtf8 } from './bounds.ts'
import type { LaunchErrorObservation, SessionObservation } from './inputs.ts'
import type { ActiveError, RecoveryAction } from './types.ts'

interface Candidate {
  sessionId: string | null
  taskRepositoryId: string | null
  stamp: string
  occurredAt: Date
  message: string
  category: string | null
  recoveryActions: readonly unknown[]
}

/** A stopped or failed session is recovered by resuming it; a live one by retrying. */
function sessionRecovery(session: SessionObservation): RecoveryAction[] {
  return ['FAILED', 'CANCELLED', 'COMPLETED'].includes(session.state) ? ['RESUME_SESSION'] : ['RETRY_DEFAULT']
}

function sessionCandidate(session: SessionObservation): Candidate | undefined {
  const error = session.error
  // A dismissed (or superseded) stamp stays cleared even if a replay writes it again;
  // a record without a stamp or a valid time cannot be shown or cleared, so it is ignored.
  if (!error || !error.stamp || error.stamp === session.errorClearedStamp) return undefined
  if (Number.isNaN(error.occurredAt.getTime())) return undefined
  return {
    sessionId: session.id,
    taskRepositoryId: null,
    stamp: error.stamp,
    occurredAt: error.occurredAt,
    message: error.message,
    category: error.code,
    recoveryActions: sessionRecovery(session),
  }
}

/** Malformed recovery metadata makes the whole record ignored, never the summary rejected. */
function launchCandidate(launch: LaunchErrorObservation | null): Candidate | undefined {
  if (!launch || launch.cleared) return undefined
  let actions: unknown
  try {
    actions = JSON.parse(launch.recoveryActions)
  } catch {
    return undefined
  }
  if (!Array.isArray(actions) || !launch.stamp || Number.isNaN(launch.occurredAt.getTime())) return undefined
  return {
    sessionId: null,
    taskRepositoryId: launch.taskRepositoryId,
    stamp: launch.stamp,
    occurredAt: launch.occurredAt,
    message: launch.message,
    category: launch.category,
    recoveryActions: actions,
  }
}

const compareText = (a: string | null, b: string | null) => ((a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0)

/** Newer first; ties broken by stamp, then session, then repository, so the choice is deterministic. */
function newer(a: Candidate, b: Candidate): number {
  return (
    b.occurredAt.getTime() - a.occurredAt.getTime() ||
    compareText(b.stamp, a.stamp) ||
    compareText(b.sessionId, a.sessionId) ||
    compareText(b.taskRepositoryId, a.taskRepositoryId)
  )
}

/** The newest relevant session error or task-owned launch error, bounded for the row. */
export function activeError(sessions: SessionObservation[], launch: LaunchErrorObservation | null): ActiveError | null {
  const candidates = [...sessions.map(sessionCandidate), launchCandidate(launch)].filter(
    (c): c is Candidate => c !== undefined,
  )
  const chosen = candidates.sort(newer)[0]
  if (!chosen) return null
  return {
    sessionId: chosen.sessionId,
    taskRepositoryId: chosen.taskRepositoryId,
    stamp: chosen.stamp,
    occurredAt: chosen.occurredAt.toISOString(),
    preview: truncateUtf8(chosen.message, PREVIEW_MAX_BYTES),
    category: chosen.category === null ? null : truncateUtf8(chosen.category, CATEGORY_MAX_BYTES),
    recoveryActions: boundRecoveryActions(chosen.recoveryActions),
  }
}
