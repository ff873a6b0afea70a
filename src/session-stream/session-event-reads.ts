/**
 * What a published session event renders, read once per event per instance and shared by every
 * subscriber of it. Rows only: nothing here is viewer-specific (each subscriber's append is
 * decided in session-stream.ts).
 */
import type { SessionEventPayload } from '../pubsub/pubsub.ts'
import { findTurn } from '../store/turns.ts'
import { findMessage, findMessageWithoutContent } from '../store/messages.ts'
import { findSessions, gitOfSessions } from '../store/sessions.ts'
import type { Store } from '../store/store.ts'
import type { MessageRow, SessionRow, TurnRow } from '../store/rows.ts'
import type { Append, StreamTag } from '../outbound/append-frame.ts'

/**
 * A message as a session event carries it: without its content when only its status or an append
 * changed (the schema reads the content for a subscriber that selects it, schema/message-content.ts).
 */
export type StreamedMessage = MessageRow | (Omit<MessageRow, 'content'> & { content?: undefined })

type GitStatus = Awaited<ReturnType<typeof gitOfSessions>>[number]

/** Session stream events as delivered; `type` picks the GraphQL object. */
export type SessionEventValue =
  | { type: 'SessionJoined'; sessionId: string; snapshot: { session: SessionRow; messages: MessageRow[] } | null }
  | { type: 'MessageAdded'; message: MessageRow }
  /** `stream`: the subscription's record of this frame, set once the event is resolved for it. */
  | { type: 'MessageUpdated'; message: StreamedMessage; append: Append | null; stream?: StreamTag }
  | { type: 'MessageDeleted'; sessionId: string; messageId: string }
  | { type: 'SessionStateChanged'; session: SessionRow }
  /** The session's models as the agent published them (the schema parses `session.availableModels`). */
  | { type: 'SessionModelsUpdated'; sessionId: string; session: SessionRow }
  | { type: 'TurnStarted'; turn: TurnRow }
  | { type: 'TurnCompleted'; turn: TurnRow }
  | { type: 'SessionGitUpdated'; sessionId: string; git: GitStatus[] }
  | { type: 'SessionResync'; sessionId: string; reason: string }

/** Reads what one published session event renders. */
async function readSessionEvent(store: Store, payload: SessionEventPayload): Promise<SessionEventValue | undefined> {
  switch (payload.type) {
    case 'MessageAdded': {
      const message = await findMessage(store, payload.messageId)
      return message ? { type: payload.type, message } : undefined
    }
    case 'MessageUpdated': {
      if (payload.append || payload.contentUnchanged) {
        // The content is read only if some subscriber selects it (message-content.ts). The frame
        // describes the publication's version even when the row has moved on, so that a client
        // keeping the highest version does not skip the next append.
        const row = await findMessageWithoutContent(store, payload.messageId)
        return row ? { type: 'MessageUpdated', message: { ...row, version: payload.version }, append: null } : undefined
      }
      const message = await findMessage(store, payload.messageId)
      return message ? { type: 'MessageUpdated', message, append: null } : undefined
    }
    case 'MessageDeleted':
      return { type: 'MessageDeleted', sessionId: payload.sessionId, messageId: payload.messageId }
    case 'SessionStateChanged': {
      const [session] = await findSessions(store, [payload.sessionId])
      return session ? { type: 'SessionStateChanged', session } : undefined
    }
    case 'SessionModelsUpdated': {
      const [session] = await findSessions(store, [payload.sessionId])
      return session ? { type: 'SessionModelsUpdated', sessionId: session.id, session } : undefined
    }
    case 'TurnStarted':
    case 'TurnCompleted': {
      const turn = await findTurn(store, payload.turnId)
      return turn ? { type: payload.type, turn } : undefined
    }
    case 'SessionGitUpdated':
      return { type: 'SessionGitUpdated', sessionId: payload.sessionId, git: await gitOfSessions(store, [payload.sessionId]) }
    case 'SessionResync':
      return payload
  }
}

/**
 * The pub/sub hands the same payload object to every local subscriber of the event (in process
 * and after one JSON.parse per Redis message), so keying by identity makes the read once per
 * event per instance, whatever the number of subscribers; the entry goes when the event does.
 * Publishers build a new payload object per publish, so an entry never outlives its event's rows.
 */
const sharedReads = new WeakMap<SessionEventPayload, Promise<SessionEventValue | undefined>>()

export function sharedSessionEvent(store: Store, payload: SessionEventPayload): Promise<SessionEventValue | undefined> {
  let read = sharedReads.get(payload)
  if (!read) {
    // A failed read fails this event for every subscriber alike: each subscription ends with an error frame.
    read = readSessionEvent(store, payload)
    sharedReads.set(payload, read)
  }
  return read
}
