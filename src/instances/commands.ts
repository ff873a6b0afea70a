// What one instance asks the owner of a session to do, and what comes back. Plain JSON: it
// crosses Redis. Results name records by id; the asking instance loads them itself.

export type SessionCommand =
  | { type: 'addMessage'; input: { taskId: string; sessionId: string; clientMessageId: string; content: string } }
  | {
      type: 'respond'
      sessionId: string
      pendingId: string
      kind: 'PERMISSION_REQUEST' | 'CLARIFICATION'
      answer: { optionId?: string; text?: string }
    }
  | { type: 'stop'; sessionId: string; finalState: 'CANCELLED' | 'COMPLETED' }
  | { type: 'resume'; sessionId: string }
  /** A client opened the session (sessionEvents): its agent relaunches if none runs. */
  | { type: 'open'; sessionId: string }
  | { type: 'delete'; sessionId: string }
  | { type: 'refreshGit'; sessionId: string }
  /** `focusKey` names the asking instance's connection, so its end can undo the focus. */
  | { type: 'focus'; sessionId: string; focusKey: string }
  | { type: 'unfocus'; focusKey: string }

export type CommandType = SessionCommand['type']

export interface CommandResult {
  /** addMessage and respond: the message stored or answered. */
  messageId?: string
  replayed?: boolean
}

export type CommandOutcome =
  | { ok: true; result: CommandResult }
  /** A client error of the owner's (NOT_FOUND, CONFLICT, …), answered as if local. */
  | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } }
  /** The receiver does not own the session (any more): the sender looks the owner up again. */
  | { ok: false; notOwner: true }

export type InstanceMessage =
  | { kind: 'request'; requestId: string; from: string; /** epoch ms: after it the sender has given up */ deadline: number; command: SessionCommand }
  | { kind: 'reply'; requestId: string; outcome: CommandOutcome }
  | { kind: 'resync'; reason: string }

/** Commands that need the session's agent: a session nobody runs is claimed, and its agent launched, where they arrive. */
export const CLAIMS_OWNERSHIP: ReadonlySet<CommandType> = new Set(['addMessage', 'resume', 'open'])

export function sessionOf(command: SessionCommand): string | undefined {
  if (command.type === 'addMessage') return command.input.sessionId
  if (command.type === 'unfocus') return undefined
  return command.sessionId
}
