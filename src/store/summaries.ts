// task_status_summaries: written only by the projector, by compare-and-update on the revision.
import type { Store } from './store.ts'
import type { StoredSummary } from '../summary/types.ts'
import { parseStoredPayload } from '../summary/semantic.ts'

export function toStoredSummary(row: {
  taskId: string
  workspaceId: string
  revision: number
  payload: string
  updatedAt: Date
}): StoredSummary {
  return {
    taskId: row.taskId,
    workspaceId: row.workspaceId,
    revision: row.revision,
    updatedAt: row.updatedAt,
    payload: parseStoredPayload(row.payload),
  }
}

/** Stored rows as is (payload still canonical JSON), one statement for any number of tasks. */
export function readSummaryRows({ db }: Store, taskIds: readonly string[]) {
  return db.taskStatusSummary.findMany({ where: { taskId: { in: [...taskIds] } } })
}

export type SummaryRow = Awaited<ReturnType<typeof readSummaryRows>>[number]

/**
 * CompareAndUpdateTaskStatusSummary. `expectedRevision` null means "no row yet": the insert
 * loses to a concurrent one on the primary key. Otherwise the update applies only while the
 * row still has that revision AND a different payload. False means stale or unchanged: the
 * caller reloads and compares again.
 */
export async function compareAndUpdateSummary(
  { db }: Store,
  write: { taskId: string; workspaceId: string; expectedRevision: number | null; payload: string; updatedAt: Date },
): Promise<boolean> {
  if (write.expectedRevision === null) {
    try {
      await db.taskStatusSummary.create({
        data: { taskId: write.taskId, workspaceId: write.workspaceId, revision: 1, payload: write.payload, updatedAt: write.updatedAt },
      })
      return true
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code === 'P2002' || code === 'P2003') return false // inserted concurrently, or the task is gone
      throw error
    }
  }
  const { count } = await db.taskStatusSummary.updateMany({
    where: { taskId: write.taskId, revision: write.expectedRevision, NOT: { payload: write.payload } },
    data: { revision: write.expectedRevision + 1, payload: write.payload, updatedAt: write.updatedAt },
  })
  return count === 1
}

/** First rows for many tasks in one statement; false when any already existed (callers fall back per task). */
export async function insertSummaries(
  { db }: Store,
  rows: { taskId: string; workspaceId: string; payload: string; updatedAt: Date }[],
): Promise<boolean> {
  if (rows.length === 0) return true
  try {
    await db.taskStatusSummary.createMany({ data: rows.map((r) => ({ ...r, revision: 1 })) })
    return true
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'P2002' || code === 'P2003') return false
    throw error
  }
}
