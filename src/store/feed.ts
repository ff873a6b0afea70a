// Workspace feed positions: allocation inside the writing transaction, the head, the indexed range
// reads a resume replays from, tombstones of deleted tasks, and the database's epoch.
import { randomUUID } from 'node:crypto'
import type { Prisma } from '../generated/sqlite/client.ts'
import type { Store } from './store.ts'

export type Tx = Prisma.TransactionClient

/**
 * Takes the workspace's next `count` positions and returns the last. Called inside the
 * transaction that makes the change: the update locks the workspace row until commit, so
 * positions commit in the order they were taken (a reader that sees position n sees every
 * change before it), and a rolled-back change gives its position back.
 */
export async function allocateFeedPositions(tx: Tx, workspaceId: string, count = 1): Promise<number> {
  // Raw: every summary revision and task write takes a position, and Prisma's query builder cost
  // that write about 1 ms of CPU, the raw statement a third of that (bench P14). No row (the
  // workspace is gone): the model's update below throws its usual not-found error.
  const [row] = await tx.$queryRaw<{ feedSequence: number | bigint }[]>`
    UPDATE "Workspace" SET "feedSequence" = "feedSequence" + ${count} WHERE "id" = ${workspaceId} RETURNING "feedSequence"`
  if (row) return Number(row.feedSequence)
  const { feedSequence } = await tx.workspace.update({
    where: { id: workspaceId },
    data: { feedSequence: { increment: count } },
    select: { feedSequence: true },
  })
  return feedSequence
}

export interface FeedHead {
  /** The last allocated (and, once read, committed) position. */
  sequence: number
  /** Resume cursors before this position may have missed a purged deletion. */
  floor: number
}

export async function feedHead({ db }: Store, workspaceId: string): Promise<FeedHead | null> {
  const row = await db.workspace.findUnique({ where: { id: workspaceId }, select: { feedSequence: true, feedFloor: true } })
  return row && { sequence: row.feedSequence, floor: row.feedFloor }
}

/**
 * What changed in (after, upTo]: task rows, summaries and tombstones whose latest position lies
 * in the range, each in its current state. Three range reads on (workspaceId, feedSequence),
 * costing the number of tasks changed, never the number of events or tasks.
 */
export async function feedChangesBetween({ db }: Store, workspaceId: string, after: number, upTo: number) {
  const range = { workspaceId, feedSequence: { gt: after, lte: upTo } }
  const [tasks, summaries, tombstones] = await Promise.all([
    db.task.findMany({ where: range }),
    db.taskStatusSummary.findMany({ where: range }),
    db.taskTombstone.findMany({ where: range }),
  ])
  return { tasks, summaries, tombstones }
}

export function recordTombstone(tx: Tx, row: { taskId: string; workspaceId: string; feedSequence: number; deletedAt: Date }) {
  return tx.taskTombstone.upsert({ where: { taskId: row.taskId }, create: row, update: row })
}

/**
 * Forgets tombstones older than `cutoff`, first raising each workspace's floor to the newest
 * position forgotten, in one transaction: a cursor before the floor is then known to be too old.
 */
export async function purgeTombstones({ db }: Store, cutoff: Date): Promise<number> {
  return db.$transaction(async (tx) => {
    const expired = await tx.taskTombstone.groupBy({
      by: ['workspaceId'],
      where: { deletedAt: { lt: cutoff } },
      _max: { feedSequence: true },
    })
    let purged = 0
    for (const { workspaceId, _max } of expired) {
      const newest = _max.feedSequence ?? 0
      await tx.workspace.updateMany({ where: { id: workspaceId, feedFloor: { lt: newest } }, data: { feedFloor: newest } })
      const { count } = await tx.taskTombstone.deleteMany({ where: { workspaceId, feedSequence: { lte: newest }, deletedAt: { lt: cutoff } } })
      purged += count
    }
    return purged
  })
}

const EPOCH_ROW = 'feed'

/** This database's feed identity, created by the first server that starts on it. */
export async function ensureFeedEpoch({ db, now }: Store): Promise<string> {
  const existing = await db.feedEpoch.findUnique({ where: { id: EPOCH_ROW } })
  if (existing) return existing.epoch
  try {
    await db.feedEpoch.create({ data: { id: EPOCH_ROW, epoch: randomUUID(), createdAt: now() } })
  } catch (error) {
    if ((error as { code?: string }).code !== 'P2002') throw error // another instance created it first
  }
  return (await db.feedEpoch.findUniqueOrThrow({ where: { id: EPOCH_ROW } })).epoch
}
