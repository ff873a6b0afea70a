import type { FormattedExecutionResult, GraphQLFormattedError } from 'graphql'
import type { StoreApi } from 'zustand/vanilla'
import { ClientMessageDocument, ClientSessionEventsDocument, ClientSessionMessagesDocument, type ClientSessionEventsSubscription } from './generated/graphql.js'
import { errorCode } from './errors.js'
import type { Requests } from './requests.js'
import {
  applyMessageRead,
  applyMessageUpdates,
  deleteMessage,
  FrameBatch,
  initialSessionsState,
  markAllUnjoined,
  markUnjoined,
  patchSessionInfo,
  replaceTranscript,
  setSessionInfo,
  updateMembership,
  upsertMessage,
} from './sessions-store.js'
import type { SubscriptionHandle } from './transport.js'
import type { SessionEvent, SessionsState } from './types.js'

type SessionResult = FormattedExecutionResult<ClientSessionEventsSubscription, unknown>

/** Messages read on SessionResync. */
const RESYNC_LAST = 100

const messageKey = (sessionId: string, messageId: string) => `${sessionId}\u0000${messageId}`

/**
 * The detail pane's state machine: one sessionEvents subscription per visible session (while a
 * socket is connected), their events applied to the sessions store, MessageUpdated payloads
 * batched per frame, and the reads that mend a transcript: one message after a gap in its
 * appends, the newest messages after a SessionResync.
 */
export class VisibleSessions {
  #visible = new Set<string>()
  readonly #subscriptions = new Map<string, SubscriptionHandle>()
  readonly #batch = new FrameBatch()
  #frameRequested = false
  /** Session reads in flight (SessionResync); `again`: another arrived meanwhile, so read once more after this one. */
  readonly #refetches = new Map<string, { again: boolean }>()
  /**
   * One-message reads in flight, by session and message id; `version`: the newest version a gap
   * named meanwhile (an answer older than that is read once more).
   */
  readonly #messageReads = new Map<string, { sessionId: string; version: number }>()

  constructor(
    private readonly sessions: StoreApi<SessionsState>,
    private readonly requests: Requests,
    /** Schedules a frame's flush of MessageUpdated payloads. */
    private readonly requestFrame: (flush: () => void) => void,
  ) {}

  /** Subscribes the sessions newly in the set, completes those gone; the same set again does nothing. */
  setVisible(sessionIds: readonly string[]): void {
    const next = new Set(sessionIds)
    if (next.size === this.#visible.size && [...next].every((id) => this.#visible.has(id))) return
    const removed = [...this.#visible].filter((id) => !next.has(id))
    const added = [...next].filter((id) => !this.#visible.has(id))
    this.#visible = next
    for (const id of removed) {
      this.#subscriptions.get(id)?.close()
      this.#subscriptions.delete(id)
      this.#refetches.delete(id)
      for (const [key, read] of this.#messageReads) if (read.sessionId === id) this.#messageReads.delete(key)
    }
    this.#setSessions(updateMembership(this.sessions.getState(), added, removed))
    for (const id of added) this.#subscribe(id)
  }

  /** A socket was acknowledged: every visible session is subscribed (and joined) again. */
  connected(): void {
    for (const id of this.#visible) this.#subscribe(id)
  }

  /** The socket closed and took every subscription with it: no session is joined until it is back. */
  disconnected(): void {
    this.#subscriptions.clear()
    this.#setSessions(markAllUnjoined(this.sessions.getState()))
  }

  /** Completes every subscription (the transport then closes the socket). */
  closeSubscriptions(): void {
    for (const handle of this.#subscriptions.values()) handle.close()
    this.#subscriptions.clear()
  }

  dispose(): void {
    this.#visible = new Set()
    this.#batch.clear()
    this.#refetches.clear()
    this.#messageReads.clear()
    this.#setSessions(initialSessionsState())
  }

  tableSizes() {
    return {
      visibleSessions: this.#visible.size,
      sessionSubscriptions: this.#subscriptions.size,
      pendingUpdates: this.#batch.size,
      sessionRefetches: this.#refetches.size,
      messageReads: this.#messageReads.size,
    }
  }

  #setSessions(state: SessionsState): void {
    this.sessions.setState(state, true)
  }

  #subscribe(sessionId: string): void {
    if (!this.#visible.has(sessionId) || this.#subscriptions.has(sessionId) || this.requests.disposed) return
    const live = () => this.#subscriptions.get(sessionId) === handle
    const handle = this.requests.transport.subscribe(
      ClientSessionEventsDocument,
      { sessionId },
      {
        next: (result) => {
          if (live()) this.#onResult(sessionId, result)
        },
        error: (errors) => {
          if (live()) this.#onEnded(sessionId, errors)
        },
        complete: () => {
          if (live()) this.#onEnded(sessionId, undefined)
        },
      },
    )
    if (handle) this.#subscriptions.set(sessionId, handle)
  }

  #onEnded(sessionId: string, errors: readonly GraphQLFormattedError[] | undefined): void {
    this.#subscriptions.get(sessionId)?.close()
    this.#subscriptions.delete(sessionId)
    this.requests.emit({
      type: 'subscription-error',
      operation: 'sessionEvents',
      id: sessionId,
      code: errors ? errorCode(errors) : undefined,
      message: errors?.map((e) => e.message).join('; ') || 'completed by the server',
    })
    this.#setSessions(markUnjoined(this.sessions.getState(), sessionId))
  }

  #onResult(sessionId: string, result: SessionResult): void {
    if (result.errors?.length || !result.data) return this.#onEnded(sessionId, result.errors ?? [])
    this.#apply(sessionId, result.data.sessionEvents)
  }

  #apply(sessionId: string, event: SessionEvent): void {
    const set = (next: SessionsState) => this.#setSessions(next)
    const state = () => this.sessions.getState()
    switch (event.__typename) {
      case 'MessageUpdated':
        this.#batch.add({ message: event.message, append: event.append })
        this.#requestFlush()
        return
      case 'MessageAdded':
        this.#flush()
        return set(upsertMessage(state(), event.message))
      case 'MessageDeleted':
        this.#flush()
        // A read of it in flight would bring it back.
        this.#messageReads.delete(messageKey(event.sessionId, event.messageId))
        return set(deleteMessage(state(), event.sessionId, event.messageId))
      case 'TurnCompleted':
        this.#flush()
        return
      case 'SessionJoined':
        if (!event.snapshot) return
        this.#flush()
        return set(replaceTranscript(state(), sessionId, event.snapshot.session, event.snapshot.messages, true))
      case 'SessionStateChanged':
        return set(setSessionInfo(state(), event.session))
      case 'SessionGitUpdated':
        return set(patchSessionInfo(state(), event.sessionId, { git: event.git }))
      case 'SessionModelsUpdated':
        return set(patchSessionInfo(state(), event.sessionId, { models: event.models }))
      case 'SessionResync':
        this.#flush()
        this.requests.emit({ type: 'resync', scope: 'session', sessionId, reason: event.reason })
        return this.#refetch(sessionId)
      case 'TurnStarted':
        return
    }
  }

  #requestFlush(): void {
    if (this.#frameRequested) return
    this.#frameRequested = true
    this.requestFrame(() => {
      this.#frameRequested = false
      if (!this.requests.disposed) this.#flush()
    })
  }

  /**
   * The frame's MessageUpdated payloads in one store transaction: appends applied by offset; a
   * message with a gap (an append that does not continue the copy, a null append) is read again,
   * that message alone.
   */
  #flush(): void {
    if (this.#batch.size === 0) return
    const { state, gaps } = applyMessageUpdates(this.sessions.getState(), this.#batch.take())
    this.#setSessions(state)
    for (const gap of gaps) this.#readMessage(gap.sessionId, gap.messageId, gap.version)
  }

  /** Reads one message whole (Session.message) and applies it when newer than the copy. */
  #readMessage(sessionId: string, messageId: string, version: number): void {
    const key = messageKey(sessionId, messageId)
    const inFlight = this.#messageReads.get(key)
    if (inFlight) {
      // That read may have been answered before this version: it is checked when it comes.
      inFlight.version = Math.max(inFlight.version, version)
      return
    }
    const read = { sessionId, version }
    this.#messageReads.set(key, read)
    const current = () => this.#messageReads.get(key) === read && !this.requests.disposed
    let again = false
    this.requests
      .query(ClientMessageDocument, { sessionId, id: messageId })
      .then(({ session }) => {
        const message = session?.message
        // Gone (deleted, or the session is): its MessageDeleted or the session's end says so.
        if (!message || !current()) return
        this.#flush()
        this.#setSessions(applyMessageRead(this.sessions.getState(), message))
        again = message.version < read.version
      })
      .catch(() => undefined)
      .finally(() => {
        if (this.#messageReads.get(key) !== read) return
        this.#messageReads.delete(key)
        if (again && !this.requests.disposed && this.#visible.has(sessionId)) this.#readMessage(sessionId, messageId, read.version)
      })
  }

  #refetch(sessionId: string): void {
    const inFlight = this.#refetches.get(sessionId)
    if (inFlight) {
      // What that read returns may predate this gap: one more read after it.
      inFlight.again = true
      return
    }
    const read = { again: false }
    this.#refetches.set(sessionId, read)
    this.requests
      .query(ClientSessionMessagesDocument, { id: sessionId, last: RESYNC_LAST })
      .then(({ session }) => {
        if (!session || this.#refetches.get(sessionId) !== read || this.requests.disposed) return
        this.#flush()
        this.#setSessions(replaceTranscript(this.sessions.getState(), sessionId, session, session.messages, false))
      })
      .catch(() => undefined)
      .finally(() => {
        if (this.#refetches.get(sessionId) !== read) return
        this.#refetches.delete(sessionId)
        if (read.again && !this.requests.disposed && this.#visible.has(sessionId)) this.#refetch(sessionId)
      })
  }
}
