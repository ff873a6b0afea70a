import { produce, type Draft } from 'immer'
import type { Message, SessionEntry, SessionInfo, SessionsState } from './types.ts'

/**
 * The session store's rules as pure functions over plain state. Every write goes through immer's
 * `produce`, so only the touched session entry, its `messageIds` array (when an id is added or
 * removed) and the replaced message objects change; everything else keeps its identity.
 * A message is replaced only by a strictly newer `version`.
 */

export function initialSessionsState(): SessionsState {
  return { byId: {} }
}

const emptyEntry = (): SessionEntry => ({ session: null, messageIds: [], messages: {}, joined: false })

/** Membership: entries for the sessions that became visible, none for those that left. */
export function updateMembership(state: SessionsState, added: readonly string[], removed: readonly string[]): SessionsState {
  if (added.length === 0 && removed.length === 0) return state
  return produce(state, (draft) => {
    for (const id of removed) delete draft.byId[id]
    for (const id of added) if (!draft.byId[id]) draft.byId[id] = emptyEntry()
  })
}

/** The socket dropped: no entry is joined until its next snapshot. */
export function markAllUnjoined(state: SessionsState): SessionsState {
  return produce(state, (draft) => {
    for (const entry of Object.values(draft.byId)) entry.joined = false
  })
}

/** A session's stream ended (an error, or the server completed it). */
export function markUnjoined(state: SessionsState, sessionId: string): SessionsState {
  if (!state.byId[sessionId]?.joined) return state
  return produce(state, (draft) => {
    draft.byId[sessionId]!.joined = false
  })
}

function upsertInto(entry: Draft<SessionEntry>, message: Message): boolean {
  const stored = entry.messages[message.id]
  if (stored && stored.version >= message.version) return false
  if (!stored) entry.messageIds.push(message.id)
  entry.messages[message.id] = message as Draft<Message>
  return true
}

/**
 * Replaces a session's transcript with `messages` (a SessionJoined snapshot or a refetch),
 * in their order; where the store already holds the same or a newer version of one, that one stays
 * (so an unchanged message keeps its identity).
 */
export function replaceTranscript(state: SessionsState, sessionId: string, session: SessionInfo, messages: readonly Message[], joined: boolean): SessionsState {
  if (!state.byId[sessionId]) return state
  return produce(state, (draft) => {
    const entry = draft.byId[sessionId]!
    const previous = entry.messages
    const ids: string[] = []
    const byId: Record<string, Draft<Message>> = {}
    for (const message of messages) {
      if (byId[message.id]) {
        if (byId[message.id]!.version < message.version) byId[message.id] = message as Draft<Message>
        continue
      }
      const stored = previous[message.id]
      ids.push(message.id)
      byId[message.id] = stored && stored.version >= message.version ? stored : (message as Draft<Message>)
    }
    entry.messageIds = ids
    entry.messages = byId
    entry.session = session as Draft<SessionInfo>
    if (joined) entry.joined = true
  })
}

/** MessageAdded, or a mutation's answer (addMessage, respondToPermission, ...): upsert by version. */
export function upsertMessage(state: SessionsState, message: Message): SessionsState {
  if (!state.byId[message.sessionId]) return state
  return produce(state, (draft) => {
    upsertInto(draft.byId[message.sessionId]!, message)
  })
}

export function deleteMessage(state: SessionsState, sessionId: string, messageId: string): SessionsState {
  const entry = state.byId[sessionId]
  if (!entry?.messages[messageId]) return state
  return produce(state, (draft) => {
    const e = draft.byId[sessionId]!
    delete e.messages[messageId]
    e.messageIds = e.messageIds.filter((id) => id !== messageId)
  })
}

/**
 * One frame of MessageUpdated payloads (already reduced to the newest per message), applied in
 * one transaction in their order. Updates of sessions no longer visible are dropped.
 */
export function applyMessageUpdates(state: SessionsState, updates: readonly Message[]): SessionsState {
  if (updates.length === 0) return state
  return produce(state, (draft) => {
    for (const message of updates) {
      const entry = draft.byId[message.sessionId]
      if (entry) upsertInto(entry, message)
    }
  })
}

export function setSessionInfo(state: SessionsState, session: SessionInfo): SessionsState {
  if (!state.byId[session.id]) return state
  return produce(state, (draft) => {
    draft.byId[session.id]!.session = session as Draft<SessionInfo>
  })
}

export function patchSessionInfo(state: SessionsState, sessionId: string, patch: Partial<Pick<SessionInfo, 'git' | 'models'>>): SessionsState {
  if (!state.byId[sessionId]?.session) return state
  return produce(state, (draft) => {
    Object.assign(draft.byId[sessionId]!.session!, patch)
  })
}

/**
 * The render-boundary batch: during one frame only the newest MessageUpdated per message is kept
 * (by version). A Map keeps the first-key insertion order while a newer payload replaces an older one.
 */
export class FrameBatch {
  private readonly pending = new Map<string, Message>()

  /** Returns true when this is the frame's first payload (a frame must be requested). */
  add(message: Message): boolean {
    const key = `${message.sessionId}\u0000${message.id}`
    const queued = this.pending.get(key)
    const first = this.pending.size === 0
    if (!queued || queued.version < message.version) this.pending.set(key, message)
    return first
  }

  take(): Message[] {
    const updates = [...this.pending.values()]
    this.pending.clear()
    return updates
  }

  get size(): number {
    return this.pending.size
  }

  clear(): void {
    this.pending.clear()
  }
}
