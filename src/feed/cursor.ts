import { badInput } from '../errors.ts'

/** A position of one workspace's feed in one database. */
export interface FeedPosition {
  epoch: string
  workspaceId: string
  sequence: number
}

const VERSION = 1

/** Opaque to clients: base64url of [version, database epoch, workspace, sequence]. */
export function encodeFeedCursor(position: FeedPosition): string {
  return Buffer.from(JSON.stringify([VERSION, position.epoch, position.workspaceId, position.sequence])).toString('base64url')
}

/** A cursor this server could have issued (of any database or workspace), or BAD_USER_INPUT. */
export function decodeFeedCursor(value: string): FeedPosition {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
    if (Array.isArray(parsed) && parsed.length === 4) {
      const [version, epoch, workspaceId, sequence] = parsed as unknown[]
      if (
        version === VERSION &&
        typeof epoch === 'string' &&
        typeof workspaceId === 'string' &&
        Number.isSafeInteger(sequence) &&
        (sequence as number) >= 0
      )
        return { epoch, workspaceId, sequence: sequence as number }
    }
  } catch {
    // fall through to the client error below
  }
  throw badInput('after is not a feed cursor returned by this server (use boot.feedCursor or an event cursor).', 'after')
}
