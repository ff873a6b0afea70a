import { badInput } from '../errors.ts'
import type { TaskCursor, TaskOrder } from '../store/tasks.ts'

/**
 * Opaque to clients: base64url of the row's position in the order it was listed in. A
 * LAST_ACTIVITY position keeps the shape it always had ([time, id]), so cursors handed out before
 * orders existed stay valid; the other orders name themselves first.
 */
export function encodeTaskCursor(cursor: TaskCursor): string {
  const position =
    cursor.order === 'LAST_ACTIVITY'
      ? [cursor.lastActivityAt.toISOString(), cursor.id]
      : cursor.order === 'CREATED'
        ? [cursor.order, cursor.createdAt.toISOString(), cursor.id]
        : [cursor.order, cursor.rank, cursor.key, cursor.id]
  return Buffer.from(JSON.stringify(position)).toString('base64url')
}

const isTime = (v: unknown): v is string => typeof v === 'string' && !Number.isNaN(new Date(v).getTime())
const isId = (v: unknown): v is string => typeof v === 'string'

function parse(value: string): TaskCursor | undefined {
  let position: unknown
  try {
    position = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (!Array.isArray(position)) return undefined
  const p: unknown[] = position
  if (p.length === 2 && isTime(p[0]) && isId(p[1])) return { order: 'LAST_ACTIVITY', lastActivityAt: new Date(p[0]), id: p[1] }
  if (p.length === 3 && p[0] === 'CREATED' && isTime(p[1]) && isId(p[2])) return { order: 'CREATED', createdAt: new Date(p[1]), id: p[2] }
  if (p.length === 4 && p[0] === 'NEEDS_ATTENTION' && Number.isInteger(p[1]) && Number.isFinite(p[2]) && isId(p[3]))
    return { order: 'NEEDS_ATTENTION', rank: p[1] as number, key: p[2] as number, id: p[3] }
  return undefined
}

/** A position of `order`; anything else (malformed, or a cursor of another order) is BAD_USER_INPUT. */
export function decodeTaskCursor(value: string, order: TaskOrder): TaskCursor {
  const cursor = parse(value)
  if (!cursor) throw badInput('after is not a cursor returned by this server.', 'after')
  if (cursor.order !== order) throw badInput(`after is a cursor of another order than ${order}.`, 'after')
  return cursor
}
