import { produce, type Draft } from 'immer'
import type { Message, MessageAppend, MessageGap, MessageUpdate, SessionEntry, SessionInfo, SessionsState } from './types.js'

/**
 * The session store's rules as pure functions over plain state. Every write goes through immer's
 * `produce`, so only the touched session entry, its `messageIds` array (when an id is added or
 * removed) and the replaced message objects change; everything else keeps its identity.
 * A whole message replaces the held one when its `version` is newer, or when it is the same
 * version with more content (the held copy was being rebuilt from the slices of that version).
 * A MessageUpdate extends the held content by its append (contract v1.3): applied when its offset
 * is the length held, whatever the version; ignored when it ends at or before that length; any
 * other offset (or a null append of a newer version, or a message not held that belongs in the
 * transcript) is a gap: that one message is read again (Session.message), whole.
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

/** Whether a whole `incoming` message should replace the `held` one. */
function newer(incoming: Message, held: Message | undefined): boolean {
  if (!held) return true
  return incoming.version > held.version || (incoming.version === held.version && incoming.content.length > held.content.length)
}

function upsertInto(entry: Draft<SessionEntry>, message: Message): boolean {
  const stored = entry.messages[message.id]
  if (stored && !newer(message, stored)) return false
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
        if (newer(message, byId[message.id])) byId[message.id] = message as Draft<Message>
        continue
      }
      const stored = previous[message.id]
      ids.push(message.id)
      byId[message.id] = stored && !newer(message, stored) ? stored : (message as Draft<Message>)
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

export type AppendOutcome = 'applied' | 'ignored' | 'gap'

/**
 * What to do with an update against the copy held (contract v1.3): an append whose offset is the
 * length held is applied whatever its version (slices of one append share it); one that ends at or
 * before that length is in the copy already; any other offset is a gap. A null append is a gap
 * unless the copy is of that version or newer.
 */
export function appendOutcome(held: Pick<Message, 'content' | 'version'> | undefined, update: MessageUpdate): AppendOutcome {
  if (!held) return 'gap'
  const { append } = update
  if (append === null) return held.version >= update.message.version ? 'ignored' : 'gap'
  const length = held.content.length
  if (append.offset === length) return 'applied'
  return append.offset + append.text.length <= length ? 'ignored' : 'gap'
}

/**
 * Created before every message the transcript holds: outside the newest messages it shows (a
 * snapshot's or a read's window), so an update of it is not a gap of the transcript.
 */
function beforeWindow(entry: SessionEntry, message: Pick<Message, 'createdAt'>): boolean {
  const oldest = entry.messageIds[0]
  return oldest !== undefined && Date.parse(message.createdAt) < Date.parse(entry.messages[oldest]!.createdAt)
}

/**
 * One frame of MessageUpdated payloads (contiguous appends already joined), applied in one
 * transaction in their order. Updates of sessions no longer visible are dropped, and so are those
 * of a message older than the transcript's window. `gaps`: the messages with an update that could
 * not be applied (read each again), once each, with the newest version seen.
 */
export function applyMessageUpdates(state: SessionsState, updates: readonly MessageUpdate[]): { state: SessionsState; gaps: MessageGap[] } {
  const gaps = new Map<string, MessageGap>()
  if (updates.length === 0) return { state, gaps: [] }
  const next = produce(state, (draft) => {
    for (const update of updates) {
      const { message } = update
      const entry = draft.byId[message.sessionId]
      if (!entry) continue
      const held = entry.messages[message.id]
      if (!held && beforeWindow(entry, message)) continue
      const outcome = appendOutcome(held, update)
      if (outcome === 'gap') {
        const key = `${message.sessionId}\u0000${message.id}`
        const version = Math.max(message.version, gaps.get(key)?.version ?? 0)
        gaps.set(key, { sessionId: message.sessionId, messageId: message.id, version })
      }
      if (outcome !== 'applied') continue
      // The other fields are the frame's when it is not older than the copy (a read may be newer).
      // What a frame does not carry (permissionOptions, toolCall) stays the copy's: text is
      // appended only to messages that have neither, and their changes come as a null append.
      const fields = message.version >= held!.version ? message : held!
      entry.messages[message.id] = { ...held!, ...fields, content: held!.content + update.append!.text, version: Math.max(held!.version, message.version) } as Draft<Message>
    }
  })
  return { state: next, gaps: [...gaps.values()] }
}

/**
 * The answer of a one-message read (Session.message): replaces the held copy when it is newer (or
 * the same version with more content); a message not held is placed by its creation time, unless
 * it is older than the transcript's window.
 */
export function applyMessageRead(state: SessionsState, message: Message): SessionsState {
  const entry = state.byId[message.sessionId]
  if (!entry) return state
  const held = entry.messages[message.id]
  if (held ? !newer(message, held) : beforeWindow(entry, message)) return state
  return produce(state, (draft) => {
    const e = draft.byId[message.sessionId]!
    if (!held) {
      // After every message created at or before it (the server orders by creation time).
      const created = Date.parse(message.createdAt)
      let at = e.messageIds.length
      while (at > 0 && Date.parse(e.messages[e.messageIds[at - 1]!]!.createdAt) > created) at--
      e.messageIds.splice(at, 0, message.id)
    }
    e.messages[message.id] = message as Draft<Message>
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
 * The render-boundary batch: the MessageUpdated payloads of one frame, per message in arrival
 * order, an append that continues the one before it joined to it (one string, one message object
 * per message and frame however many slices arrived). A Map keeps the first-key order.
 */
export class FrameBatch {
  private readonly pending = new Map<string, MessageUpdate[]>()

  /** Returns true when this is the frame's first payload (a frame must be requested). */
  add(update: MessageUpdate): boolean {
    const key = `${update.message.sessionId}\u0000${update.message.id}`
    const first = this.pending.size === 0
    const queued = this.pending.get(key)
    if (!queued) {
      this.pending.set(key, [update])
      return first
    }
    const last = queued[queued.length - 1]!
    const joined = last.append && update.append && join(last.append, update.append)
    if (joined) queued[queued.length - 1] = { message: update.message.version >= last.message.version ? update.message : last.message, append: joined }
    else queued.push(update)
    return first
  }

  take(): MessageUpdate[] {
    const updates = [...this.pending.values()].flat()
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

/** `next` continuing `append` exactly, as one append; undefined otherwise. */
function join(append: MessageAppend, next: MessageAppend): MessageAppend | undefined {
  return next.offset === append.offset + append.text.length ? { offset: append.offset, text: append.text + next.text } : undefined
}
