import { badInput } from '../errors.ts'
import type { TaskCursor } from '../store/tasks.ts'

/** Opaque to clients: base64url of the row's position in the newest-activity-first order. */
export function encodeTaskCursor(cursor: TaskCursor): string {
  return Buffer.from(JSON.stringify([cursor.lastActivityAt.toISOString(), cursor.id])).toString('base64url')
}

export function decodeTaskCursor(value: string): TaskCursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as unknown[]
    const lastActivityAt = new Date(at as string)
    if (typeof at === 'string' && typeof id === 'string' && !Number.isNaN(lastActivityAt.getTime()))
      return { lastActivityAt, id }
  } catch {
    // fall through to the client error below
  }
  throw badInput('after is not a cursor returned by this server.', 'after')
}
