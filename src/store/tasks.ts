import type { Store } from './store.ts'
import type { TaskRow } from './rows.ts'
import { allocateFeedPositions, recordTombstone } from './feed.ts'

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
  store.events.emit({ kind: 'task.created', taskId: task.id, workspaceId: task.workspaceId, feedSequence: task.feedSequence })
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
  store.events.emit({ kind: 'task.updated', taskId, workspaceId: task.workspaceId, feedSequence: task.feedSequence })
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
  store.events.emit({ kind: 'task.deleted', taskId, workspaceId: task.workspaceId, feedSequence })
  return task
}

export function findTasks({ db }: Store, ids: readonly string[]) {
  return db.task.findMany({ where: { id: { in: [...ids] } } })
}

/** One page of a workspace's tasks in `order`, after a position of that order; one extra row tells if more follow. */
export async function listTasks(
  store: Store,
  workspaceId: string,
  first: number,
  order: TaskOrder = 'LAST_ACTIVITY',
  after?: TaskCursor,
): Promise<TaskListPage> {
  if (after && after.order !== order) throw new Error(`a ${after.order} position cannot continue a ${order} list`)
  if (order === 'NEEDS_ATTENTION') return needsAttentionPage(store, workspaceId, first, after as Extract<TaskCursor, { order: 'NEEDS_ATTENTION' }>)
  const { db } = store
  const rows =
    order === 'CREATED'
      ? await db.task.findMany({
          where: { workspaceId, ...(after?.order === 'CREATED' && keysetAfter('createdAt', after.createdAt, after.id)) },
          orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
          take: first + 1,
        })
      : await db.task.findMany({
          where: { workspaceId, ...(after?.order === 'LAST_ACTIVITY' && keysetAfter('lastActivityAt', after.lastActivityAt, after.id)) },
          orderBy: [{ lastActivityAt: 'desc' }, { id: 'desc' }],
          take: first + 1,
        })
  const tasks = rows.slice(0, first)
  const positions = tasks.map(
    (t): TaskCursor =>
      order === 'CREATED'
        ? { order, createdAt: t.createdAt, id: t.id }
        : { order: 'LAST_ACTIVITY', lastActivityAt: t.lastActivityAt, id: t.id },
  )
  return { tasks, positions, hasNextPage: rows.length > first }
}

/** After (time, id) in a (time desc, id desc) order. */
function keysetAfter(column: 'createdAt' | 'lastActivityAt', at: Date, id: string) {
  return { OR: [{ [column]: { lt: at } }, { [column]: at, id: { lt: id } }] }
}

/**
 * NEEDS_ATTENTION reads the order columns the projector stores with each summary: waiting on the
 * user first (oldest waitingSince first), then an activeError, then the rest by activity. Never
 * derived from history here. A task whose summary row is missing is not listed: callers create
 * the missing rows first (Projector.ensureWorkspaceRows).
 */
async function needsAttentionPage(
  { db }: Store,
  workspaceId: string,
  first: number,
  after?: Extract<TaskCursor, { order: 'NEEDS_ATTENTION' }>,
): Promise<TaskListPage> {
  const rows = await db.taskStatusSummary.findMany({
    where: {
      workspaceId,
      ...(after && {
        OR: [
          { attentionRank: { gt: after.rank } },
          { attentionRank: after.rank, attentionKey: { gt: after.key } },
          { attentionRank: after.rank, attentionKey: after.key, taskId: { lt: after.id } },
        ],
      }),
    },
    orderBy: [{ attentionRank: 'asc' }, { attentionKey: 'asc' }, { taskId: 'desc' }],
    take: first + 1,
    select: { attentionRank: true, attentionKey: true, task: true },
  })
  const page = rows.slice(0, first)
  return {
    tasks: page.map((r) => r.task),
    positions: page.map((r): TaskCursor => ({ order: 'NEEDS_ATTENTION', rank: r.attentionRank, key: r.attentionKey, id: r.task.id })),
    hasNextPage: rows.length > first,
  }
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
