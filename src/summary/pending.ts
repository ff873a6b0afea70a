import type { PendingRequestObservation, PendingSessionObservation, TurnObservation } from './inputs.ts'
import type { SummaryPayload } from './types.ts'

/** Only these session states can be waiting on the user. */
const CAN_BE_PENDING = new Set(['RUNNING', 'WAITING_FOR_INPUT'])

/** The kind of request a turn boundary is asked about: the two differ on queued prompts. */
export type RequestKind = 'PERMISSION_REQUEST' | 'CLARIFICATION'

/**
 * An empty, unattempted dispatch reservation is not authoritative (nothing reached the agent);
 * a message-backed or attempted one is, because dispatch may have happened. A queued prompt is
 * message-backed, so it is authoritative for a clarification (the spec: the user answered the
 * question by writing, and a newer authoritative turn supersedes it); for a permission it is
 * not: the agent is blocked on that answer, which the queued prompt, waiting behind it, cannot give.
 */
export function isAuthoritativeTurn(turn: TurnObservation, forKind: RequestKind = 'PERMISSION_REQUEST'): boolean {
  if (turn.queued && forKind === 'PERMISSION_REQUEST') return false
  return !turn.promptDispatchPending || turn.promptDispatchAttempted || turn.hasMessages
}

/**
 * The newest authoritative turn of the session: the boundary for pending requests of `forKind`. A
 * lifecycle-only turn (an agent relaunch) is not a boundary: it never hides the turn the user
 * started, whether it was recorded before or after it.
 */
export function currentAuthoritativeTurn(session: PendingSessionObservation, forKind: RequestKind = 'PERMISSION_REQUEST'): TurnObservation | undefined {
  return [...session.recentTurns].sort(newestFirst).find((turn) => !turn.lifecycleOnly && isAuthoritativeTurn(turn, forKind))
}

/**
 * Whether a session's newest turn that is not a queued prompt is its current authoritative turn
 * for a permission whatever its older turns are (conversational and authoritative): then the
 * pending rules need no older turn of the session, and a loader may observe that one alone, with
 * the session's newest queued prompt (the boundary of a clarification, when one waits).
 */
export function decidesAlone(newest: TurnObservation): boolean {
  return !newest.lifecycleOnly && isAuthoritativeTurn(newest)
}

function newestFirst(a: TurnObservation, b: TurnObservation): number {
  return b.startedAt.getTime() - a.startedAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
}

/**
 * A request row arms pending only while it is PENDING in the current authoritative turn. It
 * clears only when that row itself reaches another status or is deleted: other rows, finished
 * or not, never clear it. A newer authoritative turn supersedes older pending rows.
 */
export function armedRequests(session: PendingSessionObservation): PendingRequestObservation[] {
  if (!CAN_BE_PENDING.has(session.state)) return []
  const boundary = { PERMISSION_REQUEST: currentAuthoritativeTurn(session, 'PERMISSION_REQUEST'), CLARIFICATION: currentAuthoritativeTurn(session, 'CLARIFICATION') }
  return session.pendingRequests.filter((r) => r.status === 'PENDING' && r.turnId !== null && r.turnId === boundary[r.kind]?.id)
}

export function sessionPendingAction(session: PendingSessionObservation): SummaryPayload['pendingAction'] {
  return actionOf(armedRequests(session))
}

function actionOf(armed: PendingRequestObservation[]): SummaryPayload['pendingAction'] {
  if (armed.some((r) => r.kind === 'PERMISSION_REQUEST')) return 'PERMISSION'
  if (armed.some((r) => r.kind === 'CLARIFICATION')) return 'CLARIFICATION'
  return null
}

/** Permission outranks clarification across the task's sessions. */
export function taskPendingAction(sessions: readonly PendingSessionObservation[]): SummaryPayload['pendingAction'] {
  return taskPending(sessions).pendingAction
}

const KIND_OF = { PERMISSION: 'PERMISSION_REQUEST', CLARIFICATION: 'CLARIFICATION' } as const

/**
 * The task's pendingAction and waitingSince together: waitingSince is the creation time of the
 * request behind the pendingAction, the oldest armed request of that kind across the task's
 * sessions (how long the task has waited on its user for it); null when nothing is pending.
 */
export function taskPending(sessions: readonly PendingSessionObservation[]): Pick<SummaryPayload, 'pendingAction' | 'waitingSince'> {
  const armed = sessions.flatMap(armedRequests)
  const pendingAction = actionOf(armed)
  if (!pendingAction) return { pendingAction: null, waitingSince: null }
  const times = armed.filter((r) => r.kind === KIND_OF[pendingAction]).map((r) => r.createdAt.getTime())
  return { pendingAction, waitingSince: new Date(Math.min(...times)).toISOString() }
}
