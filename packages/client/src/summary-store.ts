import { produce, type Draft } from 'immer'
import { toRow, type FeedEvent, type StatusSummary, type SummaryState, type TaskRow, type TaskRowPayload } from './types.js'

/**
 * The summary store's rules as pure functions over plain state (table-tested without a socket).
 * Feed deltas apply only a strictly newer summary revision; read payloads (boot, tasks, task)
 * apply at an equal or newer one. Every function returns the same object when nothing changed.
 */

export function initialSummaryState(): SummaryState {
  return { workspaceId: null, tasks: {}, cursor: null, status: 'idle', resyncs: 0 }
}

/** openWorkspace: a fresh, empty store for the workspace while its boot is read. */
export function startBoot(_state: SummaryState, workspaceId: string): SummaryState {
  return { workspaceId, tasks: {}, cursor: null, status: 'booting', resyncs: 0 }
}

/** A WorkspaceResync arrived: boot is refetched; the rows stay visible meanwhile. */
export function startResync(state: SummaryState): SummaryState {
  return produce(state, (draft) => {
    draft.status = 'resyncing'
    draft.resyncs += 1
  })
}

/** The boot failed for good: nothing is followed. */
export function failBoot(state: SummaryState): SummaryState {
  return produce(state, (draft) => {
    draft.status = 'idle'
  })
}

const newer = (incoming: StatusSummary | null, stored: StatusSummary | null | undefined, orEqual: boolean) =>
  incoming !== null && (stored == null || incoming.revision > stored.revision || (orEqual && incoming.revision === stored.revision))

/** Puts a read payload's row in the draft: task fields replaced, summary only when equal or newer. */
function putRead(draft: Draft<SummaryState>, payload: TaskRowPayload) {
  const stored = draft.tasks[payload.id]
  const row = toRow(payload)
  if (stored && !newer(row.summary, stored.summary, true)) row.summary = stored.summary as StatusSummary | null
  draft.tasks[payload.id] = row as Draft<TaskRow>
}

/**
 * The whole boot (every page): it is the complete list at `feedCursor`, so rows it lacks go;
 * a stored summary newer than the boot's is kept. The cursor becomes `feedCursor`.
 */
export function applyBoot(state: SummaryState, workspaceId: string, feedCursor: string, tasks: readonly TaskRowPayload[]): SummaryState {
  if (state.workspaceId !== workspaceId) return state
  return produce(state, (draft) => {
    const ids = new Set(tasks.map((t) => t.id))
    for (const id of Object.keys(draft.tasks)) if (!ids.has(id)) delete draft.tasks[id]
    for (const task of tasks) putRead(draft, task)
    draft.cursor = feedCursor
    draft.status = 'live'
  })
}

/** Rows from a read (task(id), a tasks page): task fields replaced, summary at equal or newer revision. */
export function applyTaskPayloads(state: SummaryState, workspaceId: string, tasks: readonly TaskRowPayload[]): SummaryState {
  if (state.workspaceId !== workspaceId || tasks.length === 0) return state
  return produce(state, (draft) => {
    for (const task of tasks) putRead(draft, task)
  })
}

/**
 * One workspace-feed event. TaskUpserted replaces the row's task fields (keeping the stored
 * summary unless its own is newer), TaskDeleted removes the row, TaskStatusSummaryUpdated
 * replaces the summary when its revision is newer. Each event's cursor is kept. A summary for
 * a task the store does not hold is not applied here (the caller reads that row).
 * WorkspaceResync changes nothing here: the caller refetches boot.
 */
export function applyFeedEvent(state: SummaryState, event: FeedEvent): SummaryState {
  if (event.__typename === 'WorkspaceResync') return state
  return produce(state, (draft) => {
    switch (event.__typename) {
      case 'TaskUpserted': {
        const stored = draft.tasks[event.task.id]
        const row = toRow(event.task)
        if (stored && !newer(row.summary, stored.summary, false)) row.summary = stored.summary as StatusSummary | null
        draft.tasks[event.task.id] = row as Draft<TaskRow>
        break
      }
      case 'TaskDeleted':
        delete draft.tasks[event.taskId]
        break
      case 'TaskStatusSummaryUpdated': {
        const stored = draft.tasks[event.taskId]
        if (stored && newer(event.summary, stored.summary, false)) stored.summary = event.summary as Draft<StatusSummary>
        break
      }
    }
    if (event.cursor) draft.cursor = event.cursor
  })
}

/** Whether a summary delta names a task the store lacks (its row must be read). */
export function isUnknownTask(state: SummaryState, event: FeedEvent): event is Extract<FeedEvent, { __typename: 'TaskStatusSummaryUpdated' }> {
  return event.__typename === 'TaskStatusSummaryUpdated' && !(event.taskId in state.tasks)
}
