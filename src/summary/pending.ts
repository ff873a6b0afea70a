import type { PendingRequestObservation, SessionObservation, TurnObservation } from './inputs.ts'
import type { SummaryPayload } from './types.ts'

/** Only these session states can be waiting on the user. */
const CAN_BE_PENDING = new Set(['RUNNING', 'WAITING_FOR_INPUT'])

/**
 * An empty, unattempted dispatch reservation is not authoritative (nothing reached the agent);
 * a message-backed or attempted one is, because dispatch may have happened.
 */
export function isAuthoritativeTurn(turn: TurnObservation): boolean {
  return !turn.promptDispatchPending || turn.promptDispatchAttempted || turn.hasMessages
}

/**
 * The newest authoritative turn of the session: the boundary for pending requests. A
 * lifecycle-only turn (an agent relaunch) is not a boundary: it never hides the turn the user
 * started, whether it was recorded before or after it.
 */
export function currentAuthoritativeTurn(session: SessionObservation): TurnObservation | undefined {
  return [...session.recentTurns].sort(newestFirst).find((turn) => !turn.lifecycleOnly && isAuthoritativeTurn(turn))
}

function newestFirst(a: TurnObservation, b: TurnObservation): number {
  return b.startedAt.getTime() - a.startedAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
}

/**
 * A request row arms pending only while it is PENDING in the current authoritative turn. It
 * clears only when that row itself reaches another status or is deleted: other rows, finished
 * or not, never clear it. A newer authoritative turn supersedes older pending rows.
 */
export function sessionPendingAction(session: SessionObservation): SummaryPayload['pendingAction'] {
  if (!CAN_BE_PENDING.has(session.state)) return null
  const turn = currentAuthoritativeTurn(session)
  if (!turn) return null
  const armed = session.pendingRequests.filter((r: PendingRequestObservation) => r.turnId === turn.id && r.status === 'PENDING')
  if (armed.some((r) => r.kind === 'PERMISSION_REQUEST')) return 'PERMISSION'
  if (armed.some((r) => r.kind === 'CLARIFICATION')) return 'CLARIFICATION'
  return null
}

/** Permission outranks clarification across the task's sessions. */
export function taskPendingAction(sessions: SessionObservation[]): SummaryPayload['pendingAction'] {
  const actions = sessions.map(sessionPendingAction)
  if (actions.includes('PERMISSION')) return 'PERMISSION'
  if (actions.includes('CLARIFICATION')) return 'CLARIFICATION'
  return null
}
