import type { StatusSummary, SummaryState, TaskRow } from '@task-status/client'

/**
 * Which desktop notifications the switcher owes its user: one per request a task makes of them (a
 * pending permission or question, an error), on the transition seen live. Pure: the page keeps the
 * state, claims each notice across its tabs (notice-claims.ts) and shows it.
 */
export interface AttentionNotice {
  /**
   * Names the request, the same in every tab: the summary carries no pending-request id, so a wait
   * is its task, its kind and its waitingSince (a new request has a new waitingSince), an error is
   * its task and its activeError stamp (a new error has a new stamp).
   */
  key: string
  taskId: string
  kind: 'permission' | 'clarification' | 'error'
  title: string
  body: string
}

export interface NoticeState {
  workspaceId: string | null
  /** The request keys of the last live observation; null until the first one (the baseline). */
  keys: ReadonlySet<string> | null
}

export const initialNoticeState: NoticeState = { workspaceId: null, keys: null }

/** The requests a task's summary shows, each with its notice. */
export function requestsOf(row: TaskRow): AttentionNotice[] {
  const s: StatusSummary | null = row.summary
  if (!s) return []
  const notices: AttentionNotice[] = []
  if (s.pendingAction === 'PERMISSION' || s.pendingAction === 'CLARIFICATION') {
    const permission = s.pendingAction === 'PERMISSION'
    notices.push({
      key: `wait:${row.id}:${s.pendingAction}:${s.waitingSince ?? ''}`,
      taskId: row.id,
      kind: permission ? 'permission' : 'clarification',
      title: row.title,
      body: permission ? 'Needs your permission' : 'Has a question for you',
    })
  }
  if (s.activeError) notices.push({ key: `error:${row.id}:${s.activeError.stamp}`, taskId: row.id, kind: 'error', title: row.title, body: `Error: ${s.activeError.preview}` })
  return notices
}

/**
 * One observation of the summary store. The first live one of a workspace is the baseline: tasks
 * already waiting when the page booted (or when notifications were turned on) notify nothing. After
 * it, a request not in the previous observation is new. While a workspace boots nothing is observed
 * (its rows arrive page by page).
 */
export function observe(state: NoticeState, store: Pick<SummaryState, 'workspaceId' | 'status' | 'tasks'>): { state: NoticeState; notices: AttentionNotice[] } {
  const base = store.workspaceId === state.workspaceId ? state : { workspaceId: store.workspaceId, keys: null }
  if (store.status !== 'live' && store.status !== 'resyncing') return { state: base, notices: [] }
  const current = Object.values(store.tasks).flatMap(requestsOf)
  const keys = new Set(current.map((n) => n.key))
  const notices = base.keys === null ? [] : current.filter((n) => !base.keys!.has(n.key))
  return { state: { workspaceId: store.workspaceId, keys }, notices }
}
