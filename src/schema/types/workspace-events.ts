import { builder } from '../builder.ts'
import { requireWorkspaceMember } from '../authorize.ts'
import { createLoaders } from '../loaders.ts'
import type { GraphQLResolveInfo } from 'graphql'
import { mapAsyncIterator } from '../../util/async-iterators.ts'
import { tracing } from '../../observability/tracing.ts'
import { decodeFeedCursor, encodeFeedCursor, type FeedPosition } from '../../feed/cursor.ts'
import { openWorkspaceFeed, type FeedItem } from '../../feed/resumable-feed.ts'
import type { StoredSummary } from '../../summary/types.ts'
import type { TaskRow } from '../../store/rows.ts'
import type { Context } from '../context.ts'
import { upsertCarriesSummary } from '../feed-selection.ts'
import { TaskRef } from './task.ts'
import { TaskStatusSummaryRef } from './summary.ts'
import { summaryView } from '../../summary/view.ts'

/** Events as resolved for one subscriber: the payload plus what it renders, loaded per event. */
type ResolvedWorkspaceEvent =
  | { type: 'TaskUpserted'; task: TaskRow; cursor: string | null }
  | { type: 'TaskDeleted'; taskId: string; workspaceId: string; cursor: string | null }
  | { type: 'TaskStatusSummaryUpdated'; taskId: string; workspaceId: string; summary: StoredSummary; cursor: string | null }
  | { type: 'WorkspaceResync'; workspaceId: string; reason: string; cursor: string | null }

const TaskUpsertedRef = builder.objectRef<Extract<ResolvedWorkspaceEvent, { type: 'TaskUpserted' }>>('TaskUpserted')
TaskUpsertedRef.implement({
  fields: (t) => ({
    task: t.field({ type: TaskRef, resolve: (e) => e.task }),
    cursor: t.exposeString('cursor', { nullable: true, description: 'Feed position of this event (opaque).' }),
  }),
})

const TaskDeletedRef = builder.objectRef<Extract<ResolvedWorkspaceEvent, { type: 'TaskDeleted' }>>('TaskDeleted')
TaskDeletedRef.implement({
  fields: (t) => ({
    taskId: t.exposeID('taskId'),
    workspaceId: t.exposeID('workspaceId'),
    cursor: t.exposeString('cursor', { nullable: true, description: 'Feed position of this event (opaque).' }),
  }),
})

export const TaskStatusSummaryUpdatedRef = builder.objectRef<
  Extract<ResolvedWorkspaceEvent, { type: 'TaskStatusSummaryUpdated' }>
>('TaskStatusSummaryUpdated')
TaskStatusSummaryUpdatedRef.implement({
  description: "The complete replacement summary of one task (the spec's task.status_summary.updated).",
  fields: (t) => ({
    taskId: t.exposeID('taskId'),
    workspaceId: t.exposeID('workspaceId'),
    summary: t.field({ type: TaskStatusSummaryRef, resolve: (e) => summaryView(e.summary) }),
    cursor: t.exposeString('cursor', { nullable: true, description: 'Feed position of this event (opaque).' }),
  }),
})

const WorkspaceResyncRef = builder.objectRef<Extract<ResolvedWorkspaceEvent, { type: 'WorkspaceResync' }>>(
  'WorkspaceResync',
)
WorkspaceResyncRef.implement({
  description:
    'Deltas may have been missed (the pub/sub link was interrupted, or a resume cursor is too old or unknown): refetch boot/tasks, then follow on from its feedCursor.',
  fields: (t) => ({
    workspaceId: t.exposeID('workspaceId'),
    reason: t.exposeString('reason', { description: '"cursor-expired" when the resume cursor is too old or of another database.' }),
    cursor: t.exposeString('cursor', { nullable: true, description: 'The position live events continue after, when known.' }),
  }),
})

const WorkspaceEventRef = builder.unionType('WorkspaceEvent', {
  types: [TaskUpsertedRef, TaskDeletedRef, TaskStatusSummaryUpdatedRef, WorkspaceResyncRef],
  resolveType: (event) => event.type,
})

/**
 * Resolves one feed item for one subscriber. Loaders are made fresh per event, and a task that
 * is gone by the time its upsert is delivered is skipped (its TaskDeleted follows).
 */
async function resolveWorkspaceEvent(ctx: Context, item: FeedItem): Promise<ResolvedWorkspaceEvent | undefined> {
  ctx.loaders = createLoaders(ctx, ctx.principal?.userId)
  const cursor =
    item.sequence !== undefined && item.sequence > 0
      ? encodeFeedCursor({ epoch: ctx.feed.epoch, workspaceId: item.workspaceId, sequence: item.sequence })
      : null
  switch (item.type) {
    case 'TaskUpserted': {
      const task = item.task ?? (await ctx.loaders.task.load(item.taskId))
      return task && task.workspaceId === item.workspaceId ? { type: 'TaskUpserted', task, cursor } : undefined
    }
    case 'TaskStatusSummaryUpdated':
      return {
        type: 'TaskStatusSummaryUpdated',
        taskId: item.taskId,
        workspaceId: item.workspaceId,
        cursor,
        summary: {
          taskId: item.taskId,
          workspaceId: item.workspaceId,
          revision: item.revision,
          updatedAt: new Date(item.updatedAt),
          payload: item.summary,
        },
      }
    case 'TaskDeleted':
      return { type: 'TaskDeleted', taskId: item.taskId, workspaceId: item.workspaceId, cursor }
    case 'WorkspaceResync':
      return { type: 'WorkspaceResync', workspaceId: item.workspaceId, reason: item.reason, cursor }
  }
}

/**
 * Resolves the item and tells the gateway its position (FeedTap): executions of one subscription
 * are sequential, so the position read after a result is that result's.
 */
async function resolveTapped(ctx: Context, item: FeedItem): Promise<ResolvedWorkspaceEvent | undefined> {
  const event = await resolveWorkspaceEvent(ctx, item)
  if (ctx.feedTap) {
    ctx.feedTap.sequence = item.sequence
    if (tracing.on) ctx.feedTap.trace = tracing.stages.deliveryOf(item)
  }
  return event
}

/** Whether the cursor is exactly where the cohort's shared live execution stands: every later position comes through it. */
function isLivePosition(ctx: Context, workspaceId: string, position: FeedPosition): boolean {
  const covered = ctx.feedTap?.liveCovered?.()
  return covered !== undefined && position.epoch === ctx.feed.epoch && position.workspaceId === workspaceId && position.sequence === covered
}

async function* emptyFeed(): AsyncIterableIterator<ResolvedWorkspaceEvent> {}

async function workspaceFeed(ctx: Context, info: GraphQLResolveInfo, workspaceId: string, after: string | null | undefined, summariesOnly = false) {
  // Validated before anything is subscribed: a malformed cursor is the client's error.
  const position = after == null ? undefined : decodeFeedCursor(after)
  await requireWorkspaceMember(ctx, workspaceId)
  ctx.onWorkspaceScope?.(workspaceId)
  // A resumed cohort member's own execution serves its replay alone; the cohort shares the live events.
  const tap = ctx.feedTap
  const replayOnly: { upTo?: number } | undefined = tap?.replayOnly && position ? {} : undefined
  if (replayOnly && position && isLivePosition(ctx, workspaceId, position)) {
    // The SDK's usual case, a cursor from the boot just read: nothing to replay, and no read.
    tap!.replayedUpTo = position.sequence
    return emptyFeed()
  }
  const shared = tap?.shared === true
  // Read from the document only for a resume: nothing else replays with it.
  const folds = position !== undefined && !summariesOnly && upsertCarriesSummary(info)
  const items = await openWorkspaceFeed(ctx.feed, workspaceId, {
    after: position,
    summariesOnly,
    upsertCarriesSummary: folds,
    replayOnly,
    fromHead: shared,
    position: shared ? tap : undefined,
  })
  if (tap && replayOnly) tap.replayedUpTo = replayOnly.upTo
  return mapAsyncIterator(items, (item) => resolveTapped(ctx, item))
}

const AFTER_DESCRIPTION =
  'Resume after this cursor (from boot.feedCursor or an event): the tasks changed since, each once in its latest state, then live.'

builder.subscriptionFields((t) => ({
  workspaceEvents: t.field({
    type: WorkspaceEventRef,
    description:
      'The workspace task feed: task changes and status-summary replacements. Same authorization as other task reads.',
    args: { workspaceId: t.arg.id({ required: true }), after: t.arg.string({ description: AFTER_DESCRIPTION }) },
    subscribe: (_root, { workspaceId, after }, ctx, info) => workspaceFeed(ctx, info, workspaceId, after),
    resolve: (event) => event,
  }),
  taskStatusSummaryUpdated: t.field({
    type: TaskStatusSummaryUpdatedRef,
    description: 'Only the status-summary replacements of the workspace feed.',
    args: { workspaceId: t.arg.id({ required: true }), after: t.arg.string({ description: AFTER_DESCRIPTION }) },
    subscribe: async (_root, { workspaceId, after }, ctx, info) =>
      mapAsyncIterator(await workspaceFeed(ctx, info, workspaceId, after, true), (event) =>
        event.type === 'TaskStatusSummaryUpdated' ? event : undefined,
      ),
    resolve: (event) => event,
  }),
}))
