// The failures of a session command that the client caused or can fix, and the answers to a
// prompt whose client id was used before, shared by the layer that checks a prompt's
// preconditions (SessionCommands) and the one that accepts it (SessionService).
import type { MessageRow } from '../store/rows.ts'
import { echoed } from '../errors.ts'

/** A failure the client caused or can fix; `code` becomes extensions.code. */
export class SessionOperationError extends Error {
  constructor(
    readonly code: 'BAD_USER_INPUT' | 'CONFLICT' | 'NOT_FOUND' | 'UNAVAILABLE',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

export interface PromptInput {
  taskId: string
  sessionId: string
  clientMessageId: string
  content: string
}

/** The session is not one of the task (or no longer exists). */
export function notASessionOfTask(input: Pick<PromptInput, 'taskId' | 'sessionId'>): SessionOperationError {
  return new SessionOperationError('NOT_FOUND', `Session ${echoed(input.sessionId)} is not a session of task ${echoed(input.taskId)}.`)
}

/**
 * A prompt whose client id is stored already: the stored message, replayed, when it is of the
 * same task; a CONFLICT when the id was used in another task of the workspace.
 */
export function replayOf(message: MessageRow, input: Pick<PromptInput, 'taskId' | 'clientMessageId'>) {
  if (message.taskId !== input.taskId)
    throw new SessionOperationError('CONFLICT', `clientMessageId ${echoed(input.clientMessageId)} is already used in another task.`)
  return { message, replayed: true }
}
