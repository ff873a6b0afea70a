import { createStore, type StoreApi } from 'zustand/vanilla'
import {
  ClientAddMessageDocument,
  ClientAnswerClarificationDocument,
  ClientRespondToPermissionDocument,
  ClientSessionMessagesDocument,
  ClientStartSessionDocument,
  ClientTaskSessionsDocument,
  ClientViewerDocument,
} from './generated/graphql.js'
import { errorCode, TaskClientError } from './errors.js'
import { newClientMessageId } from './ids.js'
import { Requests } from './requests.js'
import { initialSessionsState, setSessionInfo, upsertMessage } from './sessions-store.js'
import { backoffMs } from './socket-policy.js'
import { applyTaskPayloads, initialSummaryState } from './summary-store.js'
import { defaultWsClientFactory, Transport, type Outcome, type Timers, type WsClientFactory } from './transport.js'
import type { ClientDiagnostic, ConnectionState, Message, SendResult, SessionInfo, SessionsState, SummaryState, Viewer } from './types.js'
import { VisibleSessions } from './visible-sessions.js'
import { WorkspaceAdminOperations, type WorkspaceAdmin } from './workspace-admin.js'
import { WorkspaceFeed } from './workspace-feed.js'

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

export interface TaskClient extends WorkspaceAdmin {
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
  /** A new session of the task (its first one is the primary), of `options.agentProfile` (default "mock"). */
  startSession(taskId: string, prompt?: string, options?: { agentProfile?: string }): Promise<SessionInfo>
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
/** Messages read to reconcile an uncertain addMessage. */
const RECONCILE_LAST = 50

/**
 * The SDK's facade: it wires one transport to the two state machines that keep the stores (the
 * workspace feed for the summaries, the visible sessions for the transcripts) and carries out the
 * one-shot queries and actions itself.
 */
export class TaskClientImpl extends WorkspaceAdminOperations implements TaskClient {
  readonly summaries: StoreApi<SummaryState> = createStore<SummaryState>()(() => initialSummaryState())
  readonly sessions: StoreApi<SessionsState> = createStore<SessionsState>()(() => initialSessionsState())
  readonly connection: StoreApi<ConnectionState> = createStore<ConnectionState>()(() => ({ status: 'connecting', reconnects: 0 }))

  private readonly transport: Transport
  protected readonly requests: Requests
  private readonly feed: WorkspaceFeed
  private readonly visible: VisibleSessions
  private readonly generateId: () => string

  constructor(options: TaskClientOptions) {
    super()
    const setTimer = options.setTimer ?? ((callback: () => void, ms: number) => setTimeout(callback, ms))
    const clearTimer = options.clearTimer ?? ((handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>))
    const timers: Timers = { set: setTimer, clear: clearTimer }
    const random = options.random ?? Math.random
    this.generateId = options.generateId ?? newClientMessageId
    const raf = (globalThis as { requestAnimationFrame?: (callback: () => void) => unknown }).requestAnimationFrame
    const requestFrame = options.requestFrame ?? (typeof raf === 'function' ? (flush) => void raf(flush) : (flush) => void setTimer(flush, 16))
    this.transport = new Transport({
      url: options.url,
      token: options.token,
      webSocketImpl: options.webSocketImpl,
      factory: options.createWsClient ?? defaultWsClientFactory,
      timers,
      random,
      connection: this.connection,
      emit: (event) => this.requests.emit(event),
    })
    this.requests = new Requests(this.transport, timers, random, options.requestTimeoutMs ?? 10_000, this.connection, options.onEvent)
    this.feed = new WorkspaceFeed(this.summaries, this.requests, options.pageSize ?? BOOT_PAGE_SIZE)
    this.visible = new VisibleSessions(this.sessions, this.requests, requestFrame)
    this.transport.hooks = {
      connected: () => {
        this.feed.subscribe()
        this.visible.connected()
      },
      disconnected: () => {
        this.feed.disconnected()
        this.visible.disconnected()
      },
    }
    this.transport.start()
  }

  private get disposed(): boolean {
    return this.requests.disposed
  }

  async viewer(): Promise<Viewer> {
    return (await this.requests.query(ClientViewerDocument, {})).viewer
  }

  openWorkspace(workspaceId: string): Promise<void> {
    return this.feed.open(workspaceId)
  }

  setVisibleSessions(sessionIds: readonly string[]): void {
    if (this.disposed) return
    this.visible.setVisible(sessionIds)
  }

  async loadTaskSessions(taskId: string): Promise<SessionInfo[]> {
    const { task } = await this.requests.query(ClientTaskSessionsDocument, { id: taskId })
    if (!task) throw new TaskClientError('NOT_FOUND', `Task ${taskId} not found.`)
    if (!this.disposed) this.summaries.setState(applyTaskPayloads(this.summaries.getState(), task.workspaceId, [task]), true)
    return task.sessions
  }

  async sendMessage(input: { taskId: string; sessionId: string; content: string; clientMessageId?: string }): Promise<SendResult> {
    this.requests.assertUsable()
    const clientMessageId = input.clientMessageId ?? this.generateId()
    const variables = { input: { taskId: input.taskId, sessionId: input.sessionId, content: input.content, clientMessageId } }
    const accepted = (message: Message): SendResult => {
      if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), message), true)
      return { outcome: 'accepted', message }
    }
    const stored = () => this.sessions.getState().byId[input.sessionId]?.messages[clientMessageId]
    for (let round = 0; round < SEND_ROUNDS; round++) {
      const sent: Outcome<{ addMessage: { replayed: boolean; message: Message } }> = await this.requests.execute(ClientAddMessageDocument, variables)
      if (sent.kind === 'data') {
        const { replayed, message } = sent.data.addMessage
        if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), message), true)
        return { outcome: replayed ? 'replayed' : 'accepted', message }
      }
      if (sent.kind === 'stopped') break
      if (sent.kind === 'errors') {
        // UNAVAILABLE: nothing was done (not ready, shutting down, owner unreachable); retry the same id.
        if (errorCode(sent.errors) !== 'UNAVAILABLE') throw TaskClientError.fromErrors(sent.errors)
        await this.requests.sleep(backoffMs(round, this.requests.random))
        continue
      }
      // Uncertain: (a) the stream already brought it; (b) the newest messages hold it; (c) send the same id again.
      const seen = stored()
      if (seen) return accepted(seen)
      const read = await this.requests.execute(ClientSessionMessagesDocument, { id: input.sessionId, last: RECONCILE_LAST })
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
    const { respondToPermission } = await this.requests.mutate(ClientRespondToPermissionDocument, { sessionId, pendingId, optionId })
    if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), respondToPermission), true)
  }

  async answerClarification(sessionId: string, pendingId: string, answer: string): Promise<void> {
    const { answerClarification } = await this.requests.mutate(ClientAnswerClarificationDocument, { sessionId, pendingId, answer })
    if (!this.disposed) this.sessions.setState(upsertMessage(this.sessions.getState(), answerClarification), true)
  }

  async startSession(taskId: string, prompt?: string, options: { agentProfile?: string } = {}): Promise<SessionInfo> {
    const profile = options.agentProfile === undefined ? {} : { agentProfile: options.agentProfile }
    const input = prompt === undefined ? { taskId, ...profile } : { taskId, ...profile, prompt, clientMessageId: this.generateId() }
    const { startSession } = await this.requests.mutate(ClientStartSessionDocument, { input })
    if (!this.disposed) this.sessions.setState(setSessionInfo(this.sessions.getState(), startSession), true)
    return startSession
  }

  dispose(): void {
    if (this.disposed) return
    this.requests.dispose()
    this.feed.dispose()
    this.visible.closeSubscriptions()
    this.transport.stop()
    this.visible.dispose()
  }

  /** How many entries each table holds (tests prove dispose frees them all). */
  tableSizes(): Record<string, number> {
    const { visibleSessions, sessionSubscriptions, pendingUpdates, sessionRefetches, messageReads } = this.visible.tableSizes()
    const { feedSubscriptions, rowReads, feedTimers } = this.feed.tableSizes()
    return {
      visibleSessions,
      sessionSubscriptions,
      feedSubscriptions,
      pendingUpdates,
      rowReads,
      sessionRefetches,
      messageReads,
      sleeps: this.requests.pendingSleeps,
      feedTimers,
      storedSessions: Object.keys(this.sessions.getState().byId).length,
      storedTasks: Object.keys(this.summaries.getState().tasks).length,
      ...Object.fromEntries(Object.entries(this.transport.tableSizes()).map(([k, v]) => [`transport.${k}`, v])),
    }
  }
}

export function createTaskClient(options: TaskClientOptions): TaskClient {
  return new TaskClientImpl(options)
}
