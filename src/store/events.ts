// Source events, raised here only: after a write to the records a task's summary is derived from
// has committed, each names the task (and its workspace) so the projector re-derives that summary.
import { Prisma } from '../generated/sqlite/client.ts'
import type { SourceEvent, SourceEventKind, Store } from './store.ts'

/**
 * Each task's workspace, in one raw read: most source events ask it, so every summary change paid
 * Prisma's query builder for it (about 1 ms of CPU, a raw read a third of that: bench P14). A task
 * that is gone is not in the map.
 */
async function workspacesOf({ db }: Store, taskIds: readonly string[]): Promise<Map<string, string>> {
  const tasks = await db.$queryRaw<{ id: string; workspaceId: string }[]>`SELECT "id", "workspaceId" FROM "Task" WHERE "id" IN (${Prisma.join([...taskIds])})`
  return new Map(tasks.map((t) => [t.id, t.workspaceId]))
}

/** A task that is gone is asked again through the model, which throws its usual not-found error (P2025). */
export async function workspaceOf(store: Store, taskId: string): Promise<string> {
  const workspaceId = (await workspacesOf(store, [taskId])).get(taskId)
  if (workspaceId) return workspaceId
  return (await store.db.task.findUniqueOrThrow({ where: { id: taskId }, select: { workspaceId: true } })).workspaceId
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
  const workspaces = await workspacesOf(store, [...new Set(rows.map((r) => r.taskId))])
  for (const { taskId, sessionId } of pairs.values()) {
    const workspaceId = workspaces.get(taskId)
    // A task deleted meanwhile took its sessions with it: there is no summary left to re-derive.
    if (workspaceId) raise(store, { kind, taskId, workspaceId, sessionId })
  }
}
