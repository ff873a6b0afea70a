import { builder } from '../builder.ts'
import { requireWorkspaceMember } from '../authorize.ts'
import { createLoaders } from '../loaders.ts'
import { transformIterator } from '../../pubsub/transform.ts'
import type { WorkspaceEventPayload } from '../../pubsub/pubsub.ts'
import type { StoredSummary } from '../../summary/types.ts'
import type { TaskRow } from '../../store/rows.ts'
import type { Context } from '../context.ts'
import { TaskRef } from './task.ts'
import { TaskStatusSummaryRef } from './summary.ts'

/** Events as resolved for one subscriber: the payload plus what it renders, loaded per event. */
type ResolvedWorkspaceEvent =
  | { type: 'TaskUpserted'; task: TaskRow }
  | { type: 'TaskDeleted'; taskId: string; workspaceId: string }
  | { type: 'TaskStatusSummaryUpdated'; taskId: string; workspaceId: string; summary: StoredSummary }
  | { type: 'WorkspaceResync'; workspaceId: string; reason: string }

const TaskUpsertedRef = builder.objectRef<Extract<ResolvedWorkspaceEvent, { type: 'TaskUpserted' }>>('TaskUpserted')
TaskUpsertedRef.implement({
  fields: (t) => ({ task: t.field({ type: TaskRef, resolve: (e) => e.task }) }),
})

const TaskDeletedRef = builder.objectRef<Extract<ResolvedWorkspaceEvent, { type: 'TaskDeleted' }>>('TaskDeleted')
TaskDeletedRef.implement({
  fields: (t) => ({ taskId: t.exposeID('taskId'), workspaceId: t.exposeID('workspaceId') }),
})

export const TaskStatusSummaryUpdatedRef = builder.objectRef<
  Extract<ResolvedWorkspaceEvent, { type: 'TaskStatusSummaryUpdated' }>
>('TaskStatusSummaryUpdated')
TaskStatusSummaryUpdatedRef.implement({
  description: "The complete replacement summary of one task (the spec's task.status_summary.updated).",
  fields: (t) => ({
    taskId: t.exposeID('taskId'),
    workspaceId: t.exposeID('workspaceId'),
    summary: t.field({ type: TaskStatusSummaryRef, resolve: (e) => e.summary }),
  }),
})

const WorkspaceResyncRef = builder.objectRef<Extract<ResolvedWorkspaceEvent, { type: 'WorkspaceResync' }>>(
  'WorkspaceResync',
)
WorkspaceResyncRef.implement({
  description: 'Deltas may have been missed (for example the pub/sub link was interrupted): refetch boot/tasks.',
  fields: (t) => ({ workspaceId: t.exposeID('workspaceId'), reason: t.exposeString('reason') }),
})

const WorkspaceEventRef = builder.unionType('WorkspaceEvent', {
  types: [TaskUpsertedRef, TaskDeletedRef, TaskStatusSummaryUpdatedRef, WorkspaceResyncRef],
  resolveType: (event) => event.type,
})

/**
 * Resolves one feed payload for one subscriber. Loaders are made fresh per event, and a task
 * that is gone by the time its upsert is delivered is skipped (its TaskDeleted follows).
 */
async function resolveWorkspaceEvent(
  ctx: Context,
  payload: WorkspaceEventPayload,
): Promise<ResolvedWorkspaceEvent | undefined> {
  ctx.loaders = createLoaders(ctx, ctx.principal?.userId)
  switch (payload.type) {
    case 'TaskUpserted': {
      const task = await ctx.loaders.task.load(payload.taskId)
      return task && task.workspaceId === payload.workspaceId ? { type: 'TaskUpserted', task } : undefined
    }
    case 'TaskStatusSummaryUpdated':
      return {
        type: 'TaskStatusSummaryUpdated',
        taskId: payload.taskId,
        workspaceId: payload.workspaceId,
        summary: {
          taskId: payload.taskId,
          workspaceId: payload.workspaceId,
          revision: payload.revision,
          updatedAt: new Date(payload.updatedAt),
          payload: payload.summary,
        },
      }
    default:
      return payload
  }
}

function workspaceFeed(ctx: Context, workspaceId: string) {
  const source = ctx.pubsub.subscribe('workspace', workspaceId, {
    onOverflow: () => ({ type: 'WorkspaceResync', workspaceId, reason: 'subscriber fell behind; deltas were dropped' }),
  })
  return transformIterator(source, (payload) => resolveWorkspaceEvent(ctx, payload))
}

builder.subscriptionFields((t) => ({
  workspaceEvents: t.field({
    type: WorkspaceEventRef,
    description:
      'The workspace task feed: task changes and status-summary replacements. Same authorization as other task reads.',
    args: { workspaceId: t.arg.id({ required: true }) },
    subscribe: async (_root, { workspaceId }, ctx) => {
      await requireWorkspaceMember(ctx, workspaceId)
      return workspaceFeed(ctx, workspaceId)
    },
    resolve: (event) => event,
  }),
  taskStatusSummaryUpdated: t.field({
    type: TaskStatusSummaryUpdatedRef,
    description: 'Only the status-summary replacements of the workspace feed.',
    args: { workspaceId: t.arg.id({ required: true }) },
    subscribe: async (_root, { workspaceId }, ctx) => {
      await requireWorkspaceMember(ctx, workspaceId)
      return transformIterator(workspaceFeed(ctx, workspaceId), (event) =>
        event.type === 'TaskStatusSummaryUpdated' ? event : undefined,
      )
    },
    resolve: (event) => event,
  }),
}))
