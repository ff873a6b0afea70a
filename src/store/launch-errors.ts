// A task's launch error: a session launch that failed before the session existed (one per task).
import type { Store } from './store.ts'
import { emit } from './events.ts'

export async function setLaunchError(
  store: Store,
  taskId: string,
  error: {
    stamp: string
    message: string
    category?: string | null
    recoveryActions?: string[] | string
    taskRepositoryId?: string | null
    occurredAt?: Date
  },
) {
  const data = {
    stamp: error.stamp,
    message: error.message,
    category: error.category ?? null,
    recoveryActions:
      typeof error.recoveryActions === 'string' ? error.recoveryActions : JSON.stringify(error.recoveryActions ?? []),
    taskRepositoryId: error.taskRepositoryId ?? null,
    occurredAt: error.occurredAt ?? store.now(),
    clearedAt: null,
  }
  await store.db.taskLaunchError.upsert({ where: { taskId }, create: { taskId, ...data }, update: data })
  await emit(store, 'launchError.changed', taskId)
}

/** A successful launch or recovery clears the task-owned launch error. */
export async function clearLaunchError(store: Store, taskId: string) {
  const { count } = await store.db.taskLaunchError.updateMany({
    where: { taskId, clearedAt: null },
    data: { clearedAt: store.now() },
  })
  if (count > 0) await emit(store, 'launchError.changed', taskId)
}
