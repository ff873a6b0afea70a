// A strict TypeScript consumer of the packed SDK (typechecked by test/package/sdk-package.test.ts
// under NodeNext resolution with neither the DOM lib nor @types/node, and under bundler resolution):
// the public types in use, none of them `any`.
import {
  compareTasks,
  createTaskClient,
  sortTasks,
  TASK_ORDERS,
  TaskClientError,
  type ConnectionState,
  type SendResult,
  type StatusSummary,
  type TaskClient,
  type TaskOrder,
  type TaskRow,
} from '@task-status/client'
import { useSendMessage, useSession, useTaskClient, useTaskSummaries, useWorkspace } from '@task-status/client/react'

/** `webSocketImpl`: `ws`'s WebSocket on Node 20; omitted where there is a global WebSocket. */
export function connect(url: string, token: string, webSocketImpl?: unknown): TaskClient {
  const diagnostics: string[] = []
  return createTaskClient({ url, token, webSocketImpl, onEvent: (event) => diagnostics.push(event.type) })
}

/** The rows in the server's NEEDS_ATTENTION order, with each one's summary revision. */
export function attentionList(client: TaskClient): { title: string; revision: number | null }[] {
  const rows: TaskRow[] = Object.values(client.summaries.getState().tasks)
  return rows.sort(compareTasks('NEEDS_ATTENTION')).map((row) => ({ title: row.title, revision: row.summary?.revision ?? null }))
}

export function waitingSince(summary: StatusSummary | null): Date | null {
  return summary?.pendingAction && summary.waitingSince ? new Date(summary.waitingSince) : null
}

export const orders: readonly TaskOrder[] = TASK_ORDERS
export const newestFirst = (rows: TaskRow[]): TaskRow[] => sortTasks(rows, 'CREATED')

export async function say(client: TaskClient, taskId: string, sessionId: string, content: string): Promise<string> {
  try {
    const result: SendResult = await client.sendMessage({ taskId, sessionId, content })
    // `unknown` carries the id to retry with; the others the stored message.
    return result.outcome === 'unknown' ? `retry ${result.clientMessageId}` : `${result.outcome} ${result.message.id}`
  } catch (error) {
    if (error instanceof TaskClientError) return `refused ${error.code}`
    throw error
  }
}

export function onConnection(client: TaskClient, listener: (status: ConnectionState['status']) => void): () => void {
  return client.connection.subscribe((state) => listener(state.status))
}

export const hooks = { useTaskClient, useWorkspace, useTaskSummaries, useSession, useSendMessage }
