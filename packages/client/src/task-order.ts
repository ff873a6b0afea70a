import type { TaskOrder } from './generated/graphql.js'
import type { TaskRow } from './types.js'

export type { TaskOrder }

/** The orders `tasks(orderBy:)` offers, the default first. */
export const TASK_ORDERS: readonly TaskOrder[] = ['LAST_ACTIVITY', 'NEEDS_ATTENTION', 'CREATED']

const time = (iso: string | null | undefined) => (iso ? Date.parse(iso) : 0)
/** Descending by id: the server's tie-break in every order. */
const byIdDesc = (a: TaskRow, b: TaskRow) => (a.id === b.id ? 0 : a.id < b.id ? 1 : -1)
const activity = (row: TaskRow) => time(row.summary?.lastActivityAt ?? row.updatedAt)

/** NEEDS_ATTENTION's rank: 0 waiting on its user, 1 an active error, 2 the rest. */
function attentionRank(row: TaskRow): number {
  if (row.summary?.pendingAction) return 0
  return row.summary?.activeError ? 1 : 2
}

/** Within a rank, ascending: the oldest wait first for rank 0, the newest activity first otherwise. */
function attentionKey(row: TaskRow, rank: number): number {
  if (rank === 0) return time(row.summary?.waitingSince)
  return -activity(row)
}

/**
 * The comparator of `tasks(orderBy:)` over the rows the store holds, so a list kept live by the
 * feed stays in the order the server would list it (see the TaskOrder enum in schema.graphql):
 * LAST_ACTIVITY newest activity first, CREATED newest first, NEEDS_ATTENTION waiting tasks
 * (oldest wait first), then those with an error, then the rest by activity; ties by id, descending.
 */
export function compareTasks(order: TaskOrder): (a: TaskRow, b: TaskRow) => number {
  switch (order) {
    case 'CREATED':
      return (a, b) => time(b.createdAt) - time(a.createdAt) || byIdDesc(a, b)
    case 'NEEDS_ATTENTION':
      return (a, b) => {
        const ra = attentionRank(a)
        const rb = attentionRank(b)
        return ra - rb || attentionKey(a, ra) - attentionKey(b, rb) || byIdDesc(a, b)
      }
    default:
      return (a, b) => activity(b) - activity(a) || byIdDesc(a, b)
  }
}

/** The rows in `order`, a new array (the store's record is left as it is). */
export function sortTasks(rows: Iterable<TaskRow>, order: TaskOrder = 'LAST_ACTIVITY'): TaskRow[] {
  return [...rows].sort(compareTasks(order))
}
