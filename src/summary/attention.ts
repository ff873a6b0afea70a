import type { SummaryPayload } from './types.ts'

/** A task's place in tasks(orderBy: NEEDS_ATTENTION), stored beside its summary and written with it. */
export interface AttentionOrder {
  /** 0: waiting on its user (a pendingAction); 1: an activeError; 2: the rest. */
  rank: 0 | 1 | 2
  /**
   * Ascending within a rank: waitingSince in epoch milliseconds for rank 0 (oldest first), the
   * negated lastActivityAt for ranks 1 and 2 (newest first, like LAST_ACTIVITY). Ties: task id.
   */
  key: number
}

/** A pure function of the payload: the same payload always has the same position. */
export function attentionOrder(payload: SummaryPayload): AttentionOrder {
  const activity = payload.lastActivityAt ? -new Date(payload.lastActivityAt).getTime() : 0
  if (payload.pendingAction && payload.waitingSince) return { rank: 0, key: new Date(payload.waitingSince).getTime() }
  if (payload.pendingAction) return { rank: 0, key: 0 }
  if (payload.activeError) return { rank: 1, key: activity }
  return { rank: 2, key: activity }
}
