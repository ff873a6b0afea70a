import type { FormattedExecutionResult, GraphQLFormattedError } from 'graphql'
import { createStore, type StoreApi } from 'zustand/vanilla'
import {
  ClientAddMessageDocument,
  ClientAnswerClarificationDocument,
  ClientBootDocument,
  ClientMessageDocument,
  ClientRespondToPermissionDocument,
  ClientSessionEventsDocument,
  ClientSessionMessagesDocument,
  ClientStartSessionDocument,
  ClientTaskRowDocument,
  ClientTaskSessionsDocument,
  ClientTasksPageDocument,
  ClientViewerDocument,
  ClientWorkspaceEventsDocument,
  type ClientSessionEventsSubscription,
  type ClientWorkspaceEventsSubscription,
} from './generated/graphql.ts'
import { errorCode, TaskClientError } from './errors.ts'
import { newClientMessageId } from './ids.ts'
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
} from './sessions-store.ts'
import { applyBoot, applyFeedEvent, applyTaskPayloads, failBoot, initialSummaryState, isUnknownTask, startBoot, startResync } from './summary-store.ts'
import { backoffMs, defaultWsClientFactory, FATAL_CLOSE_CODES, Transport, type Doc, type Outcome, type SubscriptionHandle, type Timers, type WsClientFactory } from './transport.ts'
import type {
  ClientDiagnostic,
  ConnectionState,
  Message,
  SendResult,
  SessionEvent,
  SessionInfo,
  SessionsState,
  SummaryState,
  TaskRowPayload,
  Viewer,
} from './types.ts'

export interface TaskClientOptions {
  /** ws(s)://host/graphql, or http(s)://host/graphql (converted to ws(s)). */
  url: string
  /** Sent as connectionParams `{ authorization: "Bearer <token>" }`. */
  token: string
  /** `ws`'s WebSocket in Node; the global WebSocket in browsers (the default). */
  webSocketImpl?: unknown
  /** Schedules a frame's flush of MessageUpdated payloads (default requestAnimationFrame, else a 16 ms timer). */
  requestFrame?: (flush: () => void) => void
  /** Backoff jitter (default Math.random). */
  random?: () => number
  /** Timers (default setTimeout/clearTimeout). */
  setTimer?: (callback: () => void, ms: number) => unknown
  clearTimer?: (handle: unknown) => void
  /** A query or mutation unanswered this long is uncertain (default 10 000 ms). */
  requestTimeoutMs?: number
  /** Diagnostics: connected, closed(code), reconnecting, resync, subscription errors. */
  onEvent?: (event: ClientDiagnostic) => void
  /** Builds the graphql-ws client of each socket (default graphql-ws `createClient`). For tests. */
  createWsClient?: WsClientFactory
  /** clientMessageId generator for sendMessage/startSession (default `web-<uuid>`). */
  generateId?: () => string
  /** Tasks per boot page (default BOOT_PAGE_SIZE). */
  pageSize?: number
}

export interface TaskClient {
  /** zustand/vanilla stores: `useStore(client.summaries, selector)` in React. */
  summaries: StoreApi<SummaryState>
  sessions: StoreApi<SessionsState>
  connection: StoreApi<ConnectionState>
  viewer(): Promise<Viewer>
  /**
   * Boots the workspace (every page of tasks), then follows workspaceEvents after boot.feedCursor.
   * Resolves once the rows are in the store; a call superseded by a later one resolves quietly.
   */
  openWorkspace(workspaceId: string): Promise<void>
  /** Subscribes the sessions newly in the set, completes those gone; the same set again does nothing. */
  setVisibleSessions(sessionIds: readonly string[]): void
  /** The task's sessions, for the detail pane (its row is applied to the summary store too). */
  loadTaskSessions(taskId: string): Promise<SessionInfo[]>
  /** addMessage with a stable clientMessageId; reconciles an uncertain answer before reporting `unknown`. */
  sendMessage(input: { taskId: string; sessionId: string; content: string; clientMessageId?: string }): Promise<SendResult>
  respondToPermission(sessionId: string, pendingId: string, optionId: string): Promise<void>
  answerClarification(sessionId: string, pendingId: string, answer: string): Promise<void>
  startSession(taskId: string, prompt?: string): Promise<SessionInfo>
  /** Completes every subscription, closes the socket, frees every table; the client is unusable after. */
  dispose(): void
}

/**
 * Tasks per boot page. The server refuses an operation over its cost limit (1,000,000): boot with
 * every summary field costs about 2,330 per task, so 500 (the `first` maximum) is refused there.
 */
export const BOOT_PAGE_SIZE = 300
/** Rounds of sendMessage: send (or re-send the same id), then reconcile; `unknown` only after these. */
export const SEND_ROUNDS = 3
/** Attempts of a query whose answer is uncertain (viewer, loadTaskSessions, refetches). */
const QUERY_ATTEMPTS = 3
/** Messages read to reconcile an uncertain addMessage. */
const RECONCILE_LAST = 50
/** Messages read on SessionResync. */
const RESYNC_LAST = 100

type FeedResult = FormattedExecutionResult<ClientWorkspaceEventsSubscription, unknown>
type SessionResult = FormattedExecutionResult<ClientSessionEventsSubscription, unknown>

interface Feed {
  workspaceId: string | null
  /** Bumped by openWorkspace: answers for an earlier workspace are dropped. */
  epoch: number
  /** Booted: the feed is subscribed whenever a socket is connected. */
  following: boolean
  handle: SubscriptionHandle | null
  /** Identity of the live subscription (its callbacks compare against it). */
  token: object | null
  /** Consecutive resyncs with no other event between them (a repeated one waits). */
  resyncStreak: number
  /** Consecutive feed subscriptions that ended without a socket close. */
  retries: number
  retryTimer: unknown
}

export class TaskClientImpl implements TaskClient {
  readonly summaries: StoreApi<SummaryState> = createStore<SummaryState>()(() => initialSummaryState())
  readonly sessions: StoreApi<SessionsState> = createStore<SessionsState>()(() => initialSessionsState())
  readonly connection: StoreApi<ConnectionState> = createStore<ConnectionState>()(() => ({ status: 'connecting', reconnects: 0 }))

  private readonly transport: Transport
  private readonly timers: Timers
  private readonly random: () => number
  private readonly requestFrame: (flush: () => void) => void
  private readonly requestTimeoutMs: number
  private readonly generateId: () => string
  private readonly pageSize: number
  private readonly onEvent?: (event: ClientDiagnostic) => void

  private disposed = false
  private readonly feed: Feed = { workspaceId: null, epoch: 0, following: false, handle: null, token: null, resyncStreak: 0, retries: 0, retryTimer: undefined }
  private visible = new Set<string>()
  private readonly sessionSubscriptions = new Map<string, SubscriptionHandle>()
  private readonly batch = new FrameBatch()
  private frameRequested = false
  private readonly rowReads = new Set<string>()
  /** Session reads in flight (SessionResync); `again`: another arrived meanwhile, so read once more after this one. */
  private readonly sessionRefetches = new Map<string, { again: boolean }>()
  /**
   * One-message reads in flight, by session and message id; `version`: the newest version a gap
   * named meanwhile (an answer older than that is read once more).
   */
  private readonly messageReads = new Map<string, { sessionId: string; version: number }>()
  /** Pending sleeps (backoff between attempts), resolved at dispose. */
  private readonly sleeps = new Map<unknown, () => void>()

  constructor(options: TaskClientOptions) {
    const setTimer = options.setTimer ?? ((callback: () => void, ms: number) => setTimeout(callback, ms))
    const clearTimer = options.clearTimer ?? ((handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>))
    this.timers = { set: setTimer, clear: clearTimer }
    this.random = options.random ?? Math.random
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000
    this.generateId = options.generateId ?? newClientMessageId
    this.pageSize = options.pageSize ?? BOOT_PAGE_SIZE
    this.onEvent = options.onEvent
    const raf = (globalThis as { requestAnimationFrame?: (callback: () => void) => unknown }).requestAnimationFrame
    this.requestFrame = options.requestFrame ?? (typeof raf === 'function' ? (flush) => void raf(flush) : (flush) => void setTimer(flush, 16))
    this.transport = new Transport({
      url: options.url,
      token: options.token,
      webSocketImpl: options.webSocketImpl,
      factory: options.createWsClient ?? defaultWsClientFactory,
      timers: this.timers,
      random: this.random,
      connection: this.connection,
      emit: (event) => this.emit(event),
    })
    this.transport.hooks = {
      connected: () => {
        this.subscribeFeed()
        for (const id of this.visible) this.subscribeSession(id)
      },
      disconnected: () => {
        this.feed.handle = null
        this.feed.token = null
        this.sessionSubscriptions.clear()
        this.sessions.setState(markAllUnjoined(this.sessions.getState()), true)
      },
    }
    this.transport.start()
  }

  private emit(event: ClientDiagnostic) {
    try {
      this.onEvent?.(event)
    } catch {
      // a diagnostics hook never breaks the client
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.disposed) return resolve()
      const handle = this.timers.set(() => {
        this.sleeps.delete(handle)
        resolve()
      }, ms)
      this.sleeps.set(handle, resolve)
    })
  }

  private closedError(): TaskClientError {
    const code = this.connection.getState().lastCloseCode
    return !this.disposed && code !== undefined && FATAL_CLOSE_CODES.has(code)
      ? new TaskClientError('CLOSED', `The server refused the token (WebSocket close ${code}).`)
      : new TaskClientError('CLOSED', 'The task client is closed.')
  }

  private assertUsable() {
    if (this.disposed || this.transport.isStopped) throw this.closedError()
  }

  /** A query, retried while its answer is uncertain (each attempt waits for a socket). */
  private async query<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables, stillWanted?: () => boolean): Promise<TResult> {
    for (let attempt = 0; ; attempt++) {
      this.assertUsable()
      const outcome = await this.transport.execute(document, variables, this.requestTimeoutMs)
      if (outcome.kind === 'data') return outcome.data
      if (outcome.kind === 'stopped') throw this.closedError()
      const unavailable = outcome.kind === 'errors' && errorCode(outcome.errors) === 'UNAVAILABLE'
      if (outcome.kind === 'errors' && !unavailable) throw TaskClientError.fromErrors(outcome.errors)
      const more = stillWanted ? stillWanted() : attempt + 1 < QUERY_ATTEMPTS
      if (!more) {
        if (outcome.kind === 'errors') throw TaskClientError.fromErrors(outcome.errors)
        throw new TaskClientError('TIMEOUT', 'The server did not answer.')
      }
      if (unavailable) await this.sleep(backoffMs(Math.min(attempt, 6), this.random))
    }
  }

  /** One mutation, not retried: an uncertain answer is an UNCERTAIN error. */
  private async mutate<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables): Promise<TResult> {
    this.assertUsable()
    const outcome = await this.transport.execute(document, variables, this.requestTimeoutMs)
    if (outcome.kind === 'data') return outcome.data
    if (outcome.kind === 'errors') throw TaskClientError.fromErrors(outcome.errors)
    if (outcome.kind === 'stopped') throw this.closedError()
    throw new TaskClientError('UNCERTAIN', 'The server did not confirm the request; it may or may not have been carried out.')
  }

  async viewer(): Promise<Viewer> {
    return (await this.query(ClientViewerDocument, {})).viewer
  }

  // ---- the workspace feed ------------------------------------------------------------------

  async openWorkspace(workspaceId: string): Promise<void> {
    this.assertUsable()
    const epoch = ++this.feed.epoch
    this.stopFeed()
    this.feed.workspaceId = workspaceId
    this.feed.resyncStreak = 0
    this.rowReads.clear()
    this.summaries.setState(startBoot(this.summaries.getState(), workspaceId), true)
    try {
      await this.boot(epoch)
    } catch (error) {
      // Superseded by another openWorkspace (or dispose): that call reports; this one just ends.
      if (epoch !== this.feed.epoch || this.disposed) return
      this.summaries.setState(failBoot(this.summaries.getState()), true)
      throw error
    }
  }

  private stopFeed() {
    this.feed.handle?.close()
    this.feed.handle = null
    this.feed.token = null
    this.feed.following = false
    if (this.feed.retryTimer !== undefined) this.timers.clear(this.feed.retryTimer)
    this.feed.retryTimer = undefined
  }

  /** Reads boot and every further page, applies them as one replacement, then follows the feed after boot.feedCursor. */
  private async boot(epoch: number): Promise<void> {
    const workspaceId = this.feed.workspaceId!
    const current = () => epoch === this.feed.epoch && !this.disposed
    // A boot is retried for as long as it is wanted: a switcher without it shows nothing.
    const { boot } = await this.query(ClientBootDocument, { workspaceId, first: this.pageSize }, current)
    const tasks: TaskRowPayload[] = boot.tasks.edges.map((e) => e.node)
    let page = boot.tasks.pageInfo
    while (page.hasNextPage && page.endCursor && current()) {
      const next = await this.query(ClientTasksPageDocument, { workspaceId, first: this.pageSize, after: page.endCursor }, current)
      tasks.push(...next.tasks.edges.map((e) => e.node))
      page = next.tasks.pageInfo
    }
    if (!current()) return
    this.summaries.setState(applyBoot(this.summaries.getState(), workspaceId, boot.feedCursor, tasks), true)
    this.feed.following = true
    this.subscribeFeed()
  }

  private subscribeFeed() {
    const { feed } = this
    if (!feed.following || feed.handle || this.disposed || feed.retryTimer !== undefined || !feed.workspaceId) return
    const token = {}
    const handle = this.transport.subscribe(
      ClientWorkspaceEventsDocument,
      { workspaceId: feed.workspaceId, after: this.summaries.getState().cursor },
      {
        next: (result) => this.onFeedResult(token, result),
        error: (errors) => this.onFeedEnded(token, errors),
        complete: () => this.onFeedEnded(token, undefined),
      },
    )
    if (!handle) return
    feed.handle = handle
    feed.token = token
  }

  private onFeedResult(token: object, result: FeedResult) {
    if (this.feed.token !== token) return
    if (result.errors?.length || !result.data) {
      this.feed.handle?.close()
      return this.onFeedEnded(token, result.errors ?? [])
    }
    const event = result.data.workspaceEvents
    if (event.__typename === 'WorkspaceResync') return this.resync(event.reason)
    this.feed.resyncStreak = 0
    this.feed.retries = 0
    const state = this.summaries.getState()
    if (isUnknownTask(state, event)) this.readRow(event.taskId)
    this.summaries.setState(applyFeedEvent(state, event), true)
  }

  private onFeedEnded(token: object, errors: readonly GraphQLFormattedError[] | undefined) {
    const { feed } = this
    if (feed.token !== token) return
    feed.handle = null
    feed.token = null
    const code = errors ? errorCode(errors) : undefined
    this.emit({
      type: 'subscription-error',
      operation: 'workspaceEvents',
      id: feed.workspaceId ?? '',
      code,
      message: errors?.map((e) => e.message).join('; ') || 'completed by the server',
    })
    if (code === 'BAD_USER_INPUT') return this.resync('bad-cursor')
    if (code === 'FORBIDDEN' || code === 'NOT_FOUND' || code === 'UNAUTHENTICATED') {
      feed.following = false
      return
    }
    feed.retryTimer = this.timers.set(
      () => {
        feed.retryTimer = undefined
        this.subscribeFeed()
      },
      backoffMs(Math.min(feed.retries++, 6), this.random),
    )
  }

  /** WorkspaceResync: boot again, then follow on from its feedCursor (a repeated resync waits first). */
  private resync(reason: string) {
    const { feed } = this
    const workspaceId = feed.workspaceId!
    const epoch = feed.epoch
    this.emit({ type: 'resync', scope: 'workspace', workspaceId, reason })
    this.stopFeed()
    this.summaries.setState(startResync(this.summaries.getState()), true)
    const streak = feed.resyncStreak++
    const run = async () => {
      if (streak > 0) await this.sleep(backoffMs(Math.min(streak - 1, 6), this.random))
      if (epoch !== feed.epoch || this.disposed) return
      await this.boot(epoch)
    }
    run().catch((error: unknown) => {
      if (epoch !== feed.epoch || this.disposed) return
      this.summaries.setState(failBoot(this.summaries.getState()), true)
      this.emit({
        type: 'subscription-error',
        operation: 'workspaceEvents',
        id: workspaceId,
        code: error instanceof TaskClientError ? error.code : undefined,
        message: error instanceof Error ? error.message : String(error),
      })
    })
  }

  /** A summary delta for a task the store lacks (moved between boot pages): read its row. */
  private readRow(taskId: string) {
    if (this.rowReads.has(taskId)) return
    this.rowReads.add(taskId)
    const epoch = this.feed.epoch
    this.query(ClientTaskRowDocument, { id: taskId })
      .then(({ task }) => {
        if (task && epoch === this.feed.epoch && !this.disposed) this.summaries.setState(applyTaskPayloads(this.summaries.getState(), task.workspaceId, [task]), true)
      })
      .catch(() => undefined)
      .finally(() => this.rowReads.delete(taskId))
  }

  // ---- sessions ----------------------------------------------------------------------------

  setVisibleSessions(sessionIds: readonly string[]): void {
    if (this.disposed) return
    const next = new Set(sessionIds)
    if (next.size === this.visible.size && [...next].every((id) => this.visible.has(id))) return
    const removed = [...this.visible].filter((id) => !next.has(id))
    const added = [...next].filter((id) => !this.visible.has(id))
    this.visible = next
    for (const id of removed) {
      this.sessionSubscriptions.get(id)?.close()
      this.sessionSubscriptions.delete(id)
      this.sessionRefetches.delete(id)
      for (const [key, read] of this.messageReads) if (read.sessionId === id) this.messageReads.delete(key)
    }
    this.sessions.setState(updateMembership(this.sessions.getState(), added, removed), true)
    for (const id of added) this.subscribeSession(id)
  }

  private subscribeSession(sessionId: string) {
    if (!this.visible.has(sessionId) || this.sessionSubscriptions.has(sessionId) || this.disposed) return
    const live = () => this.sessionSubscriptions.get(sessionId) === handle
    const handle = this.transport.subscribe(
      ClientSessionEventsDocument,
      { sessionId },
      {
        next: (result) => {
          if (live()) this.onSessionResult(sessionId, result)
        },
        error: (errors) => {
          if (live()) this.onSessionEnded(sessionId, errors)
        },
        complete: () => {
          if (live()) this.onSessionEnded(sessionId, undefined)
        },
      },
    )
    if (handle) this.sessionSubscriptions.set(sessionId, handle)
  }

  private onSessionEnded(sessionId: string, errors: readonly GraphQLFormattedError[] | undefined) {
    this.sessionSubscriptions.get(sessionId)?.close()
    this.sessionSubscriptions.delete(sessionId)
    this.emit({
      type: 'subscription-error',
      operation: 'sessionEvents',
      id: sessionId,
      code: errors ? errorCode(errors) : undefined,
      message: errors?.map((e) => e.message).join('; ') || 'completed by the server',
    })
    this.sessions.setState(markUnjoined(this.sessions.getState(), sessionId), true)
  }

  private onSessionResult(sessionId: string, result: SessionResult) {
    if (result.errors?.length || !result.data) return this.onSessionEnded(sessionId, result.errors ?? [])
    this.applySessionEvent(sessionId, result.data.sessionEvents)
  }

  private applySessionEvent(sessionId: string, event: SessionEvent) {
    const set = (next: SessionsState) => this.sessions.setState(next, true)
    const state = () => this.sessions.getState()
    switch (event.__typename) {
      case 'MessageUpdated':
        this.batch.add({ message: event.message, append: event.append })
        this.requestFlush()
        return
      case 'MessageAdded':
        this.flush()
        return set(upsertMessage(state(), event.message))
      case 'MessageDeleted':
        this.flush()
        // A read of it in flight would bring it back.
        this.messageReads.delete(messageKey(event.sessionId, event.messageId))
        return set(deleteMessage(state(), event.sessionId, event.messageId))
      case 'TurnCompleted':
        this.flush()
        return
      case 'SessionJoined':
        if (!event.snapshot) return
        this.flush()
        return set(replaceTranscript(state(), sessionId, event.snapshot.session, event.snapshot.messages, true))
      case 'SessionStateChanged':
        return set(setSessionInfo(state(), event.session))
      case 'SessionGitUpdated':
        return set(patchSessionInfo(state(), event.sessionId, { git: event.git }))
      case 'SessionModelsUpdated':
        return set(patchSessionInfo(state(), event.sessionId, { models: event.models }))
      case 'SessionResync':
        this.flush()
        this.emit({ type: 'resync', scope: 'session', sessionId, reason: event.reason })
        return this.refetchSession(sessionId)
      case 'TurnStarted':
        return
    }
  }

  private requestFlush() {
    if (this.frameRequested) return
    this.frameRequested = true
    this.requestFrame(() => {
      this.frameRequested = false
      if (!this.disposed) this.flush()
    })
  }

  /**
   * The frame's MessageUpdated payloads in one store transaction: appends applied by offset; a
   * message with a gap (an append that does not continue the copy, a null append) is read again,
   * that message alone.
   */
  private flush() {
    if (this.batch.size === 0) return
    const { state, gaps } = applyMessageUpdates(this.sessions.getState(), this.batch.take())
    this.sessions.setState(state, true)
    for (const gap of gaps) this.readMessage(gap.sessionId, gap.messageId, gap.version)
  }

  /** Reads one message whole (Session.message) and applies it when newer than the copy. */
  private readMessage(sessionId: string, messageId: string, version: number) {
    const key = messageKey(sessionId, messageId)
    const inFlight = this.messageReads.get(key)
    if (inFlight) {
      // That read may have been answered before this version: it is checked when it comes.
      inFlight.version = Math.max(inFlight.version, version)
      return
    }
    const read = { sessionId, version }
    this.messageReads.set(key, read)
    const current = () => this.messageReads.get(key) === read && !this.disposed
    let again = false
    this.query(ClientMessageDocument, { sessionId, id: messageId })
      .then(({ session }) => {
        const message = session?.message
        // Gone (deleted, or the session is): its MessageDeleted or the session's end says so.
        if (!message || !current()) return
        this.flush()
        this.sessions.setState(applyMessageRead(this.sessions.getState(), message), true)
        again = message.version < read.version
      })
      .catch(() => undefined)
      .finally(() => {
        if (this.messageReads.get(key) !== read) return
        this.messageReads.delete(key)
        if (again && !this.disposed && this.visible.has(sessionId)) this.readMessage(sessionId, messageId, read.version)
      })
  }

  private refetchSession(sessionId: string) {
    const inFlight = this.sessionRefetches.get(sessionId)
    if (inFlight) {
      // What that read returns may predate this gap: one more read after it.
      inFlight.again = true
      return
    }
    const read = { again: false }
    this.sessionRefetches.set(sessionId, read)
    this.query(ClientSessionMessagesDocument, { id: sessionId, last: RESYNC_LAST })
      .then(({ session }) => {
        if (!session || this.sessionRefetches.get(sessionId) !== read || this.disposed) return
        this.flush()
        this.sessions.setState(replaceTranscript(this.sessions.getState(), sessionId, session, session.messages, false), true)
      })
      .catch(() => undefined)
      .finally(() => {
        if (this.sessionRefetches.get(sessionId) !== read) return
        this.sessionRefetches.delete(sessionId)
        if (read.again && !this.disposed && this.visible.has(sessionId)) this.refetchSession(sessionId)
      })
  }

  async loadTaskSessions(taskId: string): Promise<SessionInfo[]> {
    const { task } = await this.query(ClientTaskSessionsDocument, { id: taskId })
    if (!task) throw new TaskClientError('NOT_FOUND', `Task ${taskId} not found.`)
    if (!this.disposed) this.summaries.setState(applyTaskPayloads(this.summaries.getState(), task.workspaceId, [task]), true)
    return task.sessions
  }

  // ---- actions -----------------------------------------------------------------------------

  async sendMessage(input: { taskId: string; sessionId: string; content: string; clientMessageId?: string }): Promise<SendResult> {
    this.assertUsable()
    const clientMessageId = input.clientMessageId ?? this.generateId()
    const variables = { input: { taskId: input.taskId, sessionId: input.sessionId, content: input.content, clientMessageId } }
    const accepted = (message: Message): SendResult => {
      if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), message), true)
      return { outcome: 'accepted', message }
    }
    const stored = () => this.sessions.getState().byId[input.sessionId]?.messages[clientMessageId]
    for (let round = 0; round < SEND_ROUNDS; round++) {
      const sent: Outcome<{ addMessage: { replayed: boolean; message: Message } }> = await this.transport.execute(
        ClientAddMessageDocument,
        variables,
        this.requestTimeoutMs,
      )
      if (sent.kind === 'data') {
        const { replayed, message } = sent.data.addMessage
        if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), message), true)
        return { outcome: replayed ? 'replayed' : 'accepted', message }
      }
      if (sent.kind === 'stopped') break
      if (sent.kind === 'errors') {
        // UNAVAILABLE: nothing was done (not ready, shutting down, owner unreachable); retry the same id.
        if (errorCode(sent.errors) !== 'UNAVAILABLE') throw TaskClientError.fromErrors(sent.errors)
        await this.sleep(backoffMs(round, this.random))
        continue
      }
      // Uncertain: (a) the stream already brought it; (b) the newest messages hold it; (c) send the same id again.
      const seen = stored()
      if (seen) return accepted(seen)
      const read = await this.transport.execute(ClientSessionMessagesDocument, { id: input.sessionId, last: RECONCILE_LAST }, this.requestTimeoutMs)
      if (read.kind === 'stopped') break
      const found = read.kind === 'data' ? read.data.session?.messages.find((m) => m.id === clientMessageId) : undefined
      if (found) return accepted(found)
      const late = stored()
      if (late) return accepted(late)
    }
    const seen = stored()
    if (seen) return accepted(seen)
    return { outcome: 'unknown', clientMessageId }
  }

  async respondToPermission(sessionId: string, pendingId: string, optionId: string): Promise<void> {
    const { respondToPermission } = await this.mutate(ClientRespondToPermissionDocument, { sessionId, pendingId, optionId })
    if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), respondToPermission), true)
  }

  async answerClarification(sessionId: string, pendingId: string, answer: string): Promise<void> {
    const { answerClarification } = await this.mutate(ClientAnswerClarificationDocument, { sessionId, pendingId, answer })
    if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), answerClarification), true)
  }

  async startSession(taskId: string, prompt?: string): Promise<SessionInfo> {
    const input = prompt === undefined ? { taskId } : { taskId, prompt, clientMessageId: this.generateId() }
    const { startSession } = await this.mutate(ClientStartSessionDocument, { input })
    if (!this.disposed) this.sessions.setState(setSessionInfo(this.sessions.getState(), startSession), true)
    return startSession
  }

  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    this.feed.epoch++
    this.stopFeed()
    this.feed.workspaceId = null
    for (const handle of this.sessionSubscriptions.values()) handle.close()
    this.sessionSubscriptions.clear()
    this.transport.stop()
    for (const [handle, resolve] of this.sleeps) {
      this.timers.clear(handle)
      resolve()
    }
    this.sleeps.clear()
    this.visible = new Set()
    this.batch.clear()
    this.rowReads.clear()
    this.sessionRefetches.clear()
    this.messageReads.clear()
    this.sessions.setState(initialSessionsState(), true)
    this.summaries.setState(initialSummaryState(), true)
  }

  /** How many entries each table holds (tests prove dispose frees them all). */
  tableSizes(): Record<string, number> {
    return {
      visibleSessions: this.visible.size,
      sessionSubscriptions: this.sessionSubscriptions.size,
      feedSubscriptions: this.feed.handle ? 1 : 0,
      pendingUpdates: this.batch.size,
      rowReads: this.rowReads.size,
      sessionRefetches: this.sessionRefetches.size,
      messageReads: this.messageReads.size,
      sleeps: this.sleeps.size,
      feedTimers: this.feed.retryTimer !== undefined ? 1 : 0,
      storedSessions: Object.keys(this.sessions.getState().byId).length,
      storedTasks: Object.keys(this.summaries.getState().tasks).length,
      ...Object.fromEntries(Object.entries(this.transport.tableSizes()).map(([k, v]) => [`transport.${k}`, v])),
    }
  }
}

const messageKey = (sessionId: string, messageId: string) => `${sessionId}\u0000${messageId}`

export function createTaskClient(options: TaskClientOptions): TaskClient {
  return new TaskClientImpl(options)
}
