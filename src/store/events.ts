// Source events, raised here only: after a write to the records a task's summary is derived from
// has committed, each names the task (and its workspace) so the projector re-derives that summary.
import type { SourceEvent, SourceEventKind, Store } from './store.ts'

export async function workspaceOf({ db }: Store, taskId: string): Promise<string> {
  return (await db.task.findUniqueOrThrow({ where: { id: taskId }, select: { workspaceId: true } })).workspaceId
}

/** A writer that knows the whole event (its workspace, a feed position) raises it as it is. */
export function raise(store: Store, event: SourceEvent) {
  store.events.emit(event)
}

/** `workspaceId` given: a writer that already read it spares the lookup. */
export async function emit(store: Store, kind: SourceEventKind, taskId: string, sessionId?: string, workspaceId?: string) {
  raise(store, { kind, taskId, workspaceId: workspaceId ?? (await workspaceOf(store, taskId)), sessionId })
}

/** One event per task + session among `rows` (a batch write), their workspaces read in one statement. */
export async function emitFor(store: Store, kind: SourceEventKind, rows: readonly { taskId: string; sessionId: string }[]) {
  const pairs = new Map(rows.map((r) => [`${r.taskId}\u0000${r.sessionId}`, r]))
  if (pairs.size === 0) return
  const taskIds = [...new Set(rows.map((r) => r.taskId))]
  const tasks = await store.db.task.findMany({ where: { id: { in: taskIds } }, select: { id: true, workspaceId: true } })
  const workspaces = new Map(tasks.map((t) => [t.id, t.workspaceId]))
  for (const { taskId, sessionId } of pairs.values()) {
    const workspaceId = workspaces.get(taskId)
    // A task deleted meanwhile took its sessions with it: there is no summary left to re-derive.
    if (workspaceId) raise(store, { kind, taskId, workspaceId, sessionId })
  }
}
