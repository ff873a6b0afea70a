import type { PubSub, WorkspaceEventPayload } from '../pubsub/pubsub.ts'
import type { SourceEvent, SourceEvents } from '../store/store.ts'
import type { Logger } from '../observability/logger.ts'

/**
 * The feed event a committed write stands for, if any. Only writes to the Task row itself
 * (title, description, workflow step, repositories) are TaskUpserted: agent activity and session
 * changes reach the feed as summary revisions alone, so a switcher's traffic follows revisions,
 * not session traffic.
 */
export function feedEventOf(event: SourceEvent): WorkspaceEventPayload | undefined {
  const sequence = event.feedSequence ?? 0
  switch (event.kind) {
    case 'task.created':
    case 'task.updated':
      return { type: 'TaskUpserted', workspaceId: event.workspaceId, taskId: event.taskId, sequence }
    case 'task.deleted':
      return { type: 'TaskDeleted', workspaceId: event.workspaceId, taskId: event.taskId, sequence }
    default:
      return undefined
  }
}

/** Turns committed task writes into workspace feed events (TaskUpserted / TaskDeleted). */
export function startTaskFeed(events: SourceEvents, pubsub: PubSub, logger: Logger): () => void {
  return events.on((event) => {
    const payload = feedEventOf(event)
    if (!payload) return
    pubsub.publish('workspace', event.workspaceId, payload).catch((error: unknown) => {
      logger.warn({ err: error, taskId: event.taskId, workspaceId: event.workspaceId }, 'task feed publish failed')
    })
  })
}
