import type { PendingRequestObservation, PendingSessionObservation, TurnObservation } from './inputs.ts'
import type { SummaryPayload } from './types.ts'

/** Only these session states can be waiting on the user. */
const CAN_BE_PENDING = new Set(['RUNNING', 'WAITING_FOR_INPUT'])

/**
 * An empty, unattempted dispatch reservation is not authoritative (nothing reached the agent);
 * a message-backed or attempted one is, because dispatch may have happened. A queued prompt is
 * not, whatever it holds: it waits behind the open turn, whose requests still wait on the user.
 */
export function isAuthoritativeTurn(turn: TurnObservation): boolean {
  if (turn.queued) return false
  return !turn.promptDispatchPending || turn.promptDispatchAttempted || turn.hasMessages
}

/**
 * The newest authoritative turn of the session: the boundary for pending requests. A
 * lifecycle-only turn (an agent relaunch) is not a boundary: it never hides the turn the user
 * started, whether it was recorded before or after it.
 */
export function currentAuthoritativeTurn(session: PendingSessionObservation): TurnObservation | undefined {
  return [...session.recentTurns].sort(newestFirst).find((turn) => !turn.lifecycleOnly && isAuthoritativeTurn(turn))
}

/**
 * Whether a session's newest turn is its current authoritative turn whatever its older turns are
 * (conversational and authoritative): then the pending rules need no other turn of the session,
 * and a loader may observe that one alone.
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
  const turn = currentAuthoritativeTurn(session)
  if (!turn) return []
  return session.pendingRequests.filter((r) => r.turnId === turn.id && r.status === 'PENDING')
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
