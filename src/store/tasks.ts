import type { Store } from './store.ts'
import type { TaskRow } from './rows.ts'
import { allocateFeedPositions, recordTombstone } from './feed.ts'
import { Prisma } from '../generated/sqlite/client.ts'
import { rawDate, rawInt } from './raw-values.ts'
import { SUMMARY_READ_COLUMNS, summaryReadRow, type RawSummaryColumns, type SummaryReadRow } from './summaries.ts'
import { raise } from './events.ts'

export interface NewTaskRepository {
  name: string
  localPath?: string | null
  baseBranch?: string | null
  branch?: string | null
}

export interface NewTask {
  workspaceId: string
  title: string
  description?: string | null
  workflowStepId?: string | null
  repositories?: NewTaskRepository[] | null
}

export interface TaskChanges {
  title?: string
  description?: string | null
  workflowStepId?: string
}

export class StepNotInWorkspace extends Error {}

export const TASK_ORDERS = ['LAST_ACTIVITY', 'CREATED', 'NEEDS_ATTENTION'] as const
export type TaskOrder = (typeof TASK_ORDERS)[number]

/**
 * A task's position in one order, the key of its cursor. Every order ends with the task id, so
 * it is total, and each is read along an index (keyset pagination: stable across pages).
 * - LAST_ACTIVITY: activity time, then id, both descending (Task_workspaceId_lastActivityAt_id).
 * - CREATED: creation time, then id, both descending (Task_workspaceId_createdAt_id).
 * - NEEDS_ATTENTION: the stored summary's attention rank and key ascending, then id descending
 *   (TaskStatusSummary_attention_idx).
 */
export type TaskCursor =
  | { order: 'LAST_ACTIVITY'; lastActivityAt: Date; id: string }
  | { order: 'CREATED'; createdAt: Date; id: string }
  | { order: 'NEEDS_ATTENTION'; rank: number; key: number; id: string }

export interface TaskListPage {
  tasks: TaskRow[]
  /** The position of each task of `tasks`, in the order listed. */
  positions: TaskCursor[]
  hasNextPage: boolean
  /** With `summaries`: the stored summary row of each listed task that has one. */
  summaries?: Map<string, SummaryReadRow>
}

async function stepOfWorkspace({ db }: Store, workspaceId: string, stepId: string | null | undefined) {
  const step = stepId
    ? await db.workflowStep.findUnique({ where: { id: stepId } })
    : await db.workflowStep.findFirst({ where: { workspaceId }, orderBy: { position: 'asc' } })
  if (!step || step.workspaceId !== workspaceId) throw new StepNotInWorkspace(stepId ?? '(first step)')
  return step
}

export async function createTask(store: Store, input: NewTask) {
  const step = await stepOfWorkspace(store, input.workspaceId, input.workflowStepId)
  const now = store.now()
  const task = await store.db.$transaction(async (tx) => {
    const feedSequence = await allocateFeedPositions(tx, input.workspaceId)
    return tx.task.create({
      data: {
        feedSequence,
        workspaceId: input.workspaceId,
        workflowStepId: step.id,
        title: input.title,
        description: input.description ?? null,
        createdAt: now,
        updatedAt: now,
        lastActivityAt: now,
        repositories: {
          create: (input.repositories ?? []).map((r, position) => ({
            position,
            name: r.name,
            localPath: r.localPath ?? null,
            baseBranch: r.baseBranch ?? null,
            branch: r.branch ?? null,
          })),
        },
      },
    })
  })
  raise(store, { kind: 'task.created', taskId: task.id, workspaceId: task.workspaceId, feedSequence: task.feedSequence })
  return task
}

/** A persisted task mutation: moves updatedAt and (monotonically) lastActivityAt. */
export async function updateTask(store: Store, taskId: string, changes: TaskChanges) {
  const current = await store.db.task.findUniqueOrThrow({ where: { id: taskId } })
  const step =
    changes.workflowStepId !== undefined
      ? await stepOfWorkspace(store, current.workspaceId, changes.workflowStepId)
      : undefined
  const now = store.now()
  const task = await store.db.$transaction(async (tx) => {
    const feedSequence = await allocateFeedPositions(tx, current.workspaceId)
    const updated = await tx.task.update({
      where: { id: taskId },
      data: {
        feedSequence,
        ...(changes.title !== undefined && { title: changes.title }),
        ...(changes.description !== undefined && { description: changes.description }),
        ...(step && { workflowStepId: step.id }),
        updatedAt: now,
      },
    })
    // Compared in the row, not against `current`: a racing update that took an earlier time and
    // commits later must not move the activity time back (R1 found that one).
    await tx.task.updateMany({ where: { id: taskId, lastActivityAt: { lt: now } }, data: { lastActivityAt: now } })
    if (updated.lastActivityAt < now) updated.lastActivityAt = now
    // A move to a terminal step is one of the three ways a task-owned launch error clears.
    if (step?.terminal && step.id !== current.workflowStepId) {
      await tx.taskLaunchError.updateMany({ where: { taskId, clearedAt: null }, data: { clearedAt: now } })
    }
    return updated
  })
  raise(store, { kind: 'task.updated', taskId, workspaceId: task.workspaceId, feedSequence: task.feedSequence })
  return task
}

/** Deletes the task and leaves a tombstone at its feed position, so a resuming feed learns of it. */
export async function deleteTask(store: Store, taskId: string) {
  const { task, feedSequence } = await store.db.$transaction(async (tx) => {
    const { workspaceId } = await tx.task.findUniqueOrThrow({ where: { id: taskId }, select: { workspaceId: true } })
    // The workspace row is locked first, as by every feed write: one lock order, no deadlock.
    const feedSequence = await allocateFeedPositions(tx, workspaceId)
    const task = await tx.task.delete({ where: { id: taskId } })
    await recordTombstone(tx, { taskId, workspaceId, feedSequence, deletedAt: store.now() })
    return { task, feedSequence }
  })
  raise(store, { kind: 'task.deleted', taskId, workspaceId: task.workspaceId, feedSequence })
  return task
}

export function findTasks({ db }: Store, ids: readonly string[]) {
  return db.task.findMany({ where: { id: { in: [...ids] } } })
}

type RawTaskRow = Omit<TaskRow, 'createdAt' | 'updatedAt' | 'lastActivityAt' | 'feedSequence'> & {
  createdAt: string | number | Date
  updatedAt: string | number | Date
  lastActivityAt: string | number | Date
  feedSequence: number | bigint
}

const TASK_COLUMNS = Prisma.sql`t."id", t."workspaceId", t."workflowStepId", t."title", t."description", t."createdAt", t."updatedAt",
  t."lastActivityAt", t."feedSequence"`

function taskRow(r: RawTaskRow): TaskRow {
  return {
    id: r.id,
    workspaceId: r.workspaceId,
    workflowStepId: r.workflowStepId,
    title: r.title,
    description: r.description,
    createdAt: rawDate(r.createdAt),
    updatedAt: rawDate(r.updatedAt),
    lastActivityAt: rawDate(r.lastActivityAt),
    feedSequence: rawInt(r.feedSequence),
  }
}

/**
 * One page of a workspace's tasks in `order`, after a position of that order; one extra row tells
 * if more follow. With `summaries` the same statement reads each task's stored summary row and
 * whether it has an open request (SUMMARY_READ_COLUMNS): a list with its summaries is one
 * statement, not the page and then its 500 ids again. Raw, each order along its index: Prisma's
 * builder costs more than the read for a 500-row page.
 */
export async function listTasks(
  { db }: Store,
  workspaceId: string,
  first: number,
  order: TaskOrder = 'LAST_ACTIVITY',
  after?: TaskCursor,
  options: { summaries?: boolean } = {},
): Promise<TaskListPage> {
  if (after && after.order !== order) throw new Error(`a ${after.order} position cannot continue a ${order} list`)
  const summaryColumns = options.summaries ? Prisma.sql`, ${SUMMARY_READ_COLUMNS}` : Prisma.empty
  let rows: (RawTaskRow & Partial<RawSummaryColumns> & { s_attentionRank?: number | bigint; s_attentionKey?: number })[]
  if (order === 'NEEDS_ATTENTION') {
    // A task whose summary row is missing is not listed: callers create the missing rows first (Projector.ensureWorkspaceRows).
    const keyset =
      after?.order === 'NEEDS_ATTENTION'
        ? Prisma.sql`AND (s."attentionRank" > ${after.rank} OR (s."attentionRank" = ${after.rank} AND s."attentionKey" > ${after.key})
            OR (s."attentionRank" = ${after.rank} AND s."attentionKey" = ${after.key} AND s."taskId" < ${after.id}))`
        : Prisma.empty
    rows = await db.$queryRaw`
      SELECT ${TASK_COLUMNS}, s."attentionRank" AS "s_attentionRank", s."attentionKey" AS "s_attentionKey" ${summaryColumns}
      FROM "TaskStatusSummary" s JOIN "Task" t ON t."id" = s."taskId"
      WHERE s."workspaceId" = ${workspaceId} ${keyset}
      ORDER BY s."attentionRank" ASC, s."attentionKey" ASC, s."taskId" DESC
      LIMIT ${first + 1}`
  } else {
    const join = options.summaries ? Prisma.sql`LEFT JOIN "TaskStatusSummary" s ON s."taskId" = t."id"` : Prisma.empty
    // After (time, id) in a (time desc, id desc) order.
    const keyset =
      after?.order === 'CREATED'
        ? Prisma.sql`AND (t."createdAt" < ${after.createdAt} OR (t."createdAt" = ${after.createdAt} AND t."id" < ${after.id}))`
        : after?.order === 'LAST_ACTIVITY'
          ? Prisma.sql`AND (t."lastActivityAt" < ${after.lastActivityAt} OR (t."lastActivityAt" = ${after.lastActivityAt} AND t."id" < ${after.id}))`
          : Prisma.empty
    const orderBy = order === 'CREATED' ? Prisma.sql`t."createdAt" DESC, t."id" DESC` : Prisma.sql`t."lastActivityAt" DESC, t."id" DESC`
    rows = await db.$queryRaw`
      SELECT ${TASK_COLUMNS} ${summaryColumns}
      FROM "Task" t ${join}
      WHERE t."workspaceId" = ${workspaceId} ${keyset}
      ORDER BY ${orderBy}
      LIMIT ${first + 1}`
  }
  const page = rows.slice(0, first)
  const tasks = page.map(taskRow)
  const positions = page.map((r, i): TaskCursor => {
    const t = tasks[i]!
    if (order === 'NEEDS_ATTENTION') return { order, rank: rawInt(r.s_attentionRank!), key: Number(r.s_attentionKey), id: t.id }
    return order === 'CREATED' ? { order, createdAt: t.createdAt, id: t.id } : { order, lastActivityAt: t.lastActivityAt, id: t.id }
  })
  const result: TaskListPage = { tasks, positions, hasNextPage: rows.length > first }
  if (options.summaries) {
    result.summaries = new Map()
    page.forEach((r, i) => {
      const summary = summaryReadRow(r as RawSummaryColumns, tasks[i]!.id, tasks[i]!.workspaceId)
      if (summary) result.summaries!.set(summary.taskId, summary)
    })
  }
  return result
}

/** Tasks of the workspace that have no stored summary yet (normally none: the projector writes one per task). */
export async function tasksWithoutSummary({ db }: Store, workspaceId: string): Promise<string[]> {
  const rows = await db.task.findMany({ where: { workspaceId, summary: { is: null } }, select: { id: true } })
  return rows.map((r) => r.id)
}

export function tasksOfSteps({ db }: Store, stepIds: readonly string[]) {
  return db.task.findMany({
    where: { workflowStepId: { in: [...stepIds] } },
    orderBy: [{ lastActivityAt: 'desc' }, { id: 'desc' }],
  })
}

export function repositoriesOfTasks({ db }: Store, taskIds: readonly string[]) {
  return db.taskRepository.findMany({
    where: { taskId: { in: [...taskIds] } },
    orderBy: [{ taskId: 'asc' }, { position: 'asc' }],
  })
}

export function sessionsOfTasks({ db }: Store, taskIds: readonly string[]) {
  return db.session.findMany({
    where: { taskId: { in: [...taskIds] } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  })
}

export function pullRequestsOfTasks({ db }: Store, taskIds: readonly string[]) {
  return db.pullRequestObservation.findMany({
    where: { taskId: { in: [...taskIds] } },
    orderBy: [{ repository: 'asc' }, { number: 'asc' }],
  })
}

/** Task ids in id order, a page at a time (startup reconciliation walks every task). */
export async function taskIdsPage({ db }: Store, after: string | undefined, size: number): Promise<string[]> {
  const rows = await db.task.findMany({
    select: { id: true },
    orderBy: { id: 'asc' },
    take: size,
    ...(after && { where: { id: { gt: after } } }),
  })
  return rows.map((t) => t.id)
}

export function getTaskWithRepositories({ db }: Store, taskId: string) {
  return db.task.findUniqueOrThrow({ where: { id: taskId }, include: { repositories: { orderBy: { position: 'asc' } } } })
}

/** Moves the task's activity time forward (never back) for prompts and conversational turns. */
export async function touchActivity(store: Store, taskId: string, at: Date) {
  await store.db.task.updateMany({ where: { id: taskId, lastActivityAt: { lt: at } }, data: { lastActivityAt: at } })
}
