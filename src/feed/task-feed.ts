import type { PubSub } from '../pubsub/pubsub.ts'
import type { SourceEvents } from '../store/store.ts'
import type { Logger } from '../observability/logger.ts'

/** Turns committed task writes into workspace feed events (TaskUpserted / TaskDeleted). */
export function startTaskFeed(events: SourceEvents, pubsub: PubSub, logger: Logger): () => void {
  return events.on((event) => {
    const payload =
      event.kind === 'task.deleted'
        ? ({ type: 'TaskDeleted', workspaceId: event.workspaceId, taskId: event.taskId } as const)
        : ({ type: 'TaskUpserted', workspaceId: event.workspaceId, taskId: event.taskId } as const)
    pubsub.publish('workspace', event.workspaceId, payload).catch((error: unknown) => {
      logger.warn({ err: error, taskId: event.taskId, workspaceId: event.workspaceId }, 'task feed publish failed')
    })
  })
}
