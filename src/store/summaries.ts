// task_status_summaries: written only by the projector, by compare-and-update on the revision.
import { Prisma } from '../generated/sqlite/client.ts'
import type { TaskStatusSummaryRow } from './rows.ts'
import { rawBool, rawDate, rawInt } from './raw-values.ts'
import type { Store } from './store.ts'
import type { StoredSummary } from '../summary/types.ts'
import { parseStoredPayload } from '../summary/semantic.ts'
import { groupBy } from '../util/group-by.ts'
import { allocateFeedPositions } from './feed.ts'

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

/** The columns of a stored row that its readers use (the projector's compare, the read paths). */
export type SummaryRow = Pick<TaskStatusSummaryRow, 'taskId' | 'workspaceId' | 'revision' | 'payload' | 'updatedAt' | 'derivationVersion'>

/** A stored row as the read paths get it: with whether its task has an open request right now. */
export type SummaryReadRow = SummaryRow & {
  /**
   * Some PENDING permission or clarification request of the task (the rows loadPendingInputs
   * reads): only such a task's pendingAction can differ from "none", so only such tasks, and
   * rows that claim a pending action, need the open requests read to reconcile.
   */
  openRequests: boolean
}

/**
 * The summary columns a read selects beside its task's (`s` is TaskStatusSummary), aliased apart
 * from the task's own; only what reading needs: a page of 500 pays for every cell.
 */
export const SUMMARY_READ_COLUMNS = Prisma.sql`s."revision" AS "s_revision", s."payload" AS "s_payload", s."updatedAt" AS "s_updatedAt",
  s."derivationVersion" AS "s_derivationVersion",
  EXISTS (SELECT 1 FROM "Message" WHERE "Message"."taskId" = s."taskId" AND "Message"."status" = 'PENDING'
    AND "Message"."kind" IN ('PERMISSION_REQUEST', 'CLARIFICATION') AND "Message"."pendingId" IS NOT NULL) AS "s_openRequests"`

export type RawSummaryColumns = {
  /** Null when a left join found no row. */
  s_revision: number | bigint | null
  s_payload: string
  s_updatedAt: string | number | Date
  s_derivationVersion: number | bigint
  s_openRequests: unknown
}

/** The summary columns of a raw row (SUMMARY_READ_COLUMNS) of a task; undefined when a left join found none. */
export function summaryReadRow(r: RawSummaryColumns, taskId: string, workspaceId: string): SummaryReadRow | undefined {
  if (r.s_revision === null) return undefined
  return {
    taskId,
    workspaceId,
    revision: rawInt(r.s_revision),
    payload: r.s_payload,
    updatedAt: rawDate(r.s_updatedAt),
    derivationVersion: rawInt(r.s_derivationVersion),
    openRequests: rawBool(r.s_openRequests),
  }
}

/**
 * Stored rows as is (payload still canonical JSON), each with its task's open-request flag, one
 * statement for any number of tasks. Raw: for a page of 500 ids Prisma's query builder costs
 * more than the primary-key reads.
 */
export async function readSummaryRows({ db }: Store, taskIds: readonly string[]): Promise<SummaryReadRow[]> {
  if (taskIds.length === 0) return []
  const rows = await db.$queryRaw<(RawSummaryColumns & { taskId: string; workspaceId: string })[]>`
    SELECT s."taskId", s."workspaceId", ${SUMMARY_READ_COLUMNS} FROM "TaskStatusSummary" s WHERE s."taskId" IN (${Prisma.join([...taskIds])})`
  return rows.map((r) => summaryReadRow(r, r.taskId, r.workspaceId)!)
}

class Rejected extends Error {}

/**
 * CompareAndUpdateTaskStatusSummary. `expectedRevision` null means "no row yet": the insert
 * loses to a concurrent one on the primary key. Otherwise the update applies only while the
 * row still has that revision AND a different payload. The written revision takes the next feed
 * position in the same transaction (returned); null means stale or unchanged, nothing written
 * and no position taken: the caller reloads and compares again.
 */
export async function compareAndUpdateSummary(
  { db }: Store,
  write: {
    taskId: string
    workspaceId: string
    expectedRevision: number | null
    payload: string
    updatedAt: Date
    derivationVersion: number
    /** The row's NEEDS_ATTENTION position, written in the same statement as the payload it comes from. */
    attentionRank: number
    attentionKey: number
  },
): Promise<{ feedSequence: number } | null> {
  try {
    return await db.$transaction(async (tx) => {
      const feedSequence = await allocateFeedPositions(tx, write.workspaceId)
      const { expectedRevision, ...row } = write
      if (expectedRevision === null) {
        await tx.taskStatusSummary.create({ data: { ...row, revision: 1, feedSequence } })
        return { feedSequence }
      }
      // Raw: every summary revision runs it, and Prisma's query builder cost the update about
      // 1 ms of CPU, the raw statement a third of that (bench P14). Dates bind as the model binds them.
      const count = await tx.$executeRaw`
        UPDATE "TaskStatusSummary" SET "revision" = ${expectedRevision + 1}, "payload" = ${write.payload}, "updatedAt" = ${write.updatedAt},
          "derivationVersion" = ${write.derivationVersion}, "attentionRank" = ${write.attentionRank}, "attentionKey" = ${write.attentionKey},
          "feedSequence" = ${feedSequence}
        WHERE "taskId" = ${write.taskId} AND "revision" = ${expectedRevision} AND "payload" <> ${write.payload}`
      if (count !== 1) throw new Rejected() // rolls the position back
      return { feedSequence }
    })
  } catch (error) {
    if (error instanceof Rejected) return null
    const code = (error as { code?: string }).code
    if (code === 'P2002' || code === 'P2003') return null // inserted concurrently, or the task is gone
    throw error
  }
}

/**
 * An unchanged payload derived by newer code: the row records the version (and the order columns
 * that code derives from the payload), clients see no change.
 */
export async function markDerivationVersion(
  { db }: Store,
  taskId: string,
  revision: number,
  derived: { derivationVersion: number; attentionRank: number; attentionKey: number },
) {
  await db.taskStatusSummary.updateMany({
    where: { taskId, revision, derivationVersion: { lt: derived.derivationVersion } },
    data: derived,
  })
}

/**
 * First rows for many tasks in one transaction (one position allocation per workspace, one
 * insert); null when any already existed or its task is gone (callers fall back per task).
 * Returns each row's feed position.
 */
export async function insertSummaries(
  { db }: Store,
  rows: {
    taskId: string
    workspaceId: string
    payload: string
    updatedAt: Date
    derivationVersion: number
    attentionRank: number
    attentionKey: number
  }[],
): Promise<Map<string, number> | null> {
  const positions = new Map<string, number>()
  if (rows.length === 0) return positions
  try {
    await db.$transaction(async (tx) => {
      const data: Prisma.TaskStatusSummaryCreateManyInput[] = []
      for (const [workspaceId, group] of groupBy(rows, (r) => r.workspaceId)) {
        const last = await allocateFeedPositions(tx, workspaceId, group.length)
        group.forEach((r, i) => {
          positions.set(r.taskId, last - group.length + 1 + i)
          data.push({ ...r, revision: 1, feedSequence: last - group.length + 1 + i })
        })
      }
      await tx.taskStatusSummary.createMany({ data })
    })
    return positions
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'P2002' || code === 'P2003') return null
    throw error
  }
}
