import { print, type DocumentNode, type FormattedExecutionResult, type GraphQLFormattedError } from 'graphql'
import { createClient, type Client, type ClientOptions } from 'graphql-ws'
import type { StoreApi } from 'zustand/vanilla'
import type { ClientDiagnostic, ConnectionState } from './types.js'
import { backoffMs, FATAL_CLOSE_CODES, KEEPALIVE_MS, PONG_TIMEOUT_MS, STABLE_CONNECTION_MS, toWebSocketUrl } from './socket-policy.js'

/** A typed document (structurally the generated TypedDocumentNode). */
export type Doc<TResult, TVariables> = DocumentNode & { __apiType?: (variables: TVariables) => TResult }

/** What the SDK asks of a graphql-ws client: one per socket. Tests inject a fake factory. */
export type WsClient = Pick<Client, 'subscribe' | 'dispose' | 'terminate'>
export type WsClientFactory = (options: ClientOptions) => WsClient

export interface Timers {
  set(callback: () => void, ms: number): unknown
  clear(handle: unknown): void
}

/** The result of one query or mutation. `uncertain`: it may or may not have been carried out. */
export type Outcome<T> =
  | { kind: 'data'; data: T }
  | { kind: 'errors'; errors: readonly GraphQLFormattedError[] }
  | { kind: 'uncertain'; sent: boolean; reason: 'timeout' | 'closed' }
  | { kind: 'stopped' }

export interface SubscriptionSink<T> {
  next(result: FormattedExecutionResult<T, unknown>): void
  /** A GraphQL error ended the subscription (not a socket close: that is `TransportHooks.disconnected`). */
  error(errors: readonly GraphQLFormattedError[] | undefined): void
  /** The server completed it. */
  complete(): void
}

export interface SubscriptionHandle {
  /** Completes the subscription (sends `complete` when the socket is open). */
  close(): void
}

export interface TransportHooks {
  /** A socket was acknowledged: subscribe what should be followed. */
  connected(reconnect: boolean): void
  /** The socket closed: every subscription of it is gone (no callback of theirs follows). */
  disconnected(): void
}

const printed = new WeakMap<DocumentNode, { query: string; operationName?: string }>()
function payloadOf(document: DocumentNode, variables: unknown) {
  let entry = printed.get(document)
  if (!entry) {
    const operation = document.definitions.find((d) => d.kind === 'OperationDefinition')
    entry = { query: print(document), operationName: operation?.kind === 'OperationDefinition' ? operation.name?.value : undefined }
    printed.set(document, entry)
  }
  return { ...entry, variables: variables as Record<string, unknown> }
}

interface Interruptible {
  /** The socket closed under the operation (`stopped`: the client was disposed or the token refused). */
  interrupt(stopped: boolean): void
}

interface Generation {
  id: number
  client: WsClient | null
  connected: boolean
  dead: boolean
  operations: Set<Interruptible>
  subscriptions: Set<SubscriptionHandle>
  /** Waiting for the pong of the last ping: a half-open socket is ended when it expires. */
  pongTimer?: unknown
}

function isCloseLike(value: unknown): value is { code: number; reason?: unknown } {
  return typeof value === 'object' && value !== null && typeof (value as { code?: unknown }).code === 'number'
}

function disposeQuietly(client: WsClient | null) {
  try {
    // graphql-ws's dispose() rejects when the socket closed before it was acknowledged.
    void Promise.resolve(client?.dispose()).catch(() => undefined)
  } catch {
    // nothing to free
  }
}

/**
 * The SDK's connection: one graphql-ws client per socket (`lazy: false`, `retryAttempts: 0`), and
 * its own reconnect loop with jittered exponential backoff. graphql-ws's built-in retry would
 * re-send the original subscribe payloads; here each new socket is a new client, and what is
 * subscribed on it is decided by the hooks (the feed resumes from the latest cursor).
 */
export class Transport {
  hooks: TransportHooks = { connected: () => undefined, disconnected: () => undefined }
  private current: Generation | null = null
  private generations = 0
  private everConnected = false
  private attempt = 0
  private retryTimer: unknown
  private stableTimer: unknown
  /** No more sockets: disposed, or the token was refused. */
  private stopped = false
  private readonly waiters = new Set<(generation: Generation | null) => void>()
  private readonly url: string

  constructor(
    private readonly options: {
      url: string
      token: string
      webSocketImpl?: unknown
      factory: WsClientFactory
      timers: Timers
      random: () => number
      connection: StoreApi<ConnectionState>
      emit: (event: ClientDiagnostic) => void
    },
  ) {
    this.url = toWebSocketUrl(options.url)
  }

  start(): void {
    this.open()
  }

  get isConnected(): boolean {
    return Boolean(this.current?.connected && !this.current.dead)
  }

  get isStopped(): boolean {
    return this.stopped
  }

  private setConnection(patch: Partial<ConnectionState>) {
    this.options.connection.setState(patch)
  }

  private open() {
    if (this.stopped) return
    const generation: Generation = { id: ++this.generations, client: null, connected: false, dead: false, operations: new Set(), subscriptions: new Set() }
    this.current = generation
    this.setConnection({ status: this.everConnected ? 'reconnecting' : 'connecting' })
    try {
      generation.client = this.options.factory({
        url: this.url,
        connectionParams: { authorization: `Bearer ${this.options.token}` },
        webSocketImpl: this.options.webSocketImpl,
        lazy: false,
        retryAttempts: 0,
        keepAlive: KEEPALIVE_MS,
        // A close is handled in `closed`; anything else (an internal error) ends this socket too.
        onNonLazyError: (error) => {
          if (!isCloseLike(error)) this.options.timers.set(() => this.lost(generation, undefined, undefined), 0)
        },
        on: {
          connected: () => this.established(generation),
          // A socket that stopped answering (a network change, a sleeping laptop) may never close by itself.
          ping: (received) => {
            if (received || generation.dead || generation.pongTimer !== undefined) return
            generation.pongTimer = this.options.timers.set(() => {
              generation.pongTimer = undefined
              if (!generation.dead) generation.client?.terminate()
            }, PONG_TIMEOUT_MS)
          },
          pong: (received) => {
            if (!received || generation.pongTimer === undefined) return
            this.options.timers.clear(generation.pongTimer)
            generation.pongTimer = undefined
          },
          closed: (event) => this.lost(generation, isCloseLike(event) ? event.code : undefined, isCloseLike(event) ? String(event.reason ?? '') : undefined),
        },
      })
    } catch {
      this.lost(generation, undefined, undefined)
    }
  }

  private established(generation: Generation) {
    if (generation !== this.current || generation.dead) return
    generation.connected = true
    const reconnect = this.everConnected
    this.everConnected = true
    const state = this.options.connection.getState()
    this.setConnection({ status: 'connected', reconnects: state.reconnects + (reconnect ? 1 : 0) })
    this.stableTimer = this.options.timers.set(() => {
      this.stableTimer = undefined
      this.attempt = 0
    }, STABLE_CONNECTION_MS)
    this.options.emit({ type: 'connected', reconnect })
    this.hooks.connected(reconnect)
    for (const waiter of [...this.waiters]) if (generation === this.current && !generation.dead) waiter(generation)
  }

  private lost(generation: Generation, code: number | undefined, reason: string | undefined) {
    if (generation.dead) return
    generation.dead = true
    generation.connected = false
    this.clearPongTimer(generation)
    disposeQuietly(generation.client)
    generation.subscriptions.clear()
    for (const operation of [...generation.operations]) operation.interrupt(false)
    if (generation !== this.current) return
    this.current = null
    if (this.stableTimer !== undefined) this.options.timers.clear(this.stableTimer)
    this.stableTimer = undefined
    const fatal = code !== undefined && FATAL_CLOSE_CODES.has(code)
    this.options.emit({ type: 'closed', code, reason, willRetry: !this.stopped && !fatal })
    if (this.stopped) return
    this.hooks.disconnected()
    if (fatal) {
      this.stopped = true
      this.setConnection({ status: 'closed', lastCloseCode: code })
      for (const waiter of [...this.waiters]) waiter(null)
      return
    }
    const attempt = this.attempt++
    const delayMs = backoffMs(attempt, this.options.random)
    this.setConnection({ status: 'reconnecting', lastCloseCode: code })
    this.options.emit({ type: 'reconnecting', attempt: attempt + 1, delayMs })
    this.retryTimer = this.options.timers.set(() => {
      this.retryTimer = undefined
      this.open()
    }, delayMs)
  }

  private clearPongTimer(generation: Generation) {
    if (generation.pongTimer !== undefined) this.options.timers.clear(generation.pongTimer)
    generation.pongTimer = undefined
  }

  /**
   * One query or mutation over the current socket (waiting for one when there is none). Unanswered
   * within `timeoutMs` of the call, or cut off by a close, it is `uncertain`.
   */
  execute<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables, timeoutMs: number): Promise<Outcome<TResult>> {
    return new Promise<Outcome<TResult>>((resolve) => {
      if (this.stopped) return resolve({ kind: 'stopped' })
      let done = false
      let sent = false
      let generation: Generation | undefined
      let unsubscribe: (() => void) | undefined
      const finish = (outcome: Outcome<TResult>) => {
        if (done) return
        done = true
        this.options.timers.clear(timer)
        this.waiters.delete(send)
        generation?.operations.delete(operation)
        if (outcome.kind === 'uncertain' && outcome.reason === 'timeout' && generation && !generation.dead) unsubscribe?.()
        resolve(outcome)
      }
      const operation: Interruptible = {
        interrupt: (stopped) => finish(stopped ? { kind: 'stopped' } : { kind: 'uncertain', sent: true, reason: 'closed' }),
      }
      const send = (g: Generation | null) => {
        this.waiters.delete(send)
        if (!g) return finish({ kind: 'stopped' })
        generation = g
        sent = true
        g.operations.add(operation)
        unsubscribe = g.client!.subscribe<TResult>(payloadOf(document, variables), {
          next: (result) => {
            if (g.dead) return
            finish(result.errors?.length || result.data == null ? { kind: 'errors', errors: result.errors ?? [] } : { kind: 'data', data: result.data })
          },
          error: (error) => {
            if (g.dead) return
            finish(Array.isArray(error) ? { kind: 'errors', errors: error as GraphQLFormattedError[] } : { kind: 'uncertain', sent: true, reason: 'closed' })
          },
          complete: () => {
            if (!g.dead) finish({ kind: 'uncertain', sent: true, reason: 'closed' })
          },
        })
      }
      const timer = this.options.timers.set(() => finish({ kind: 'uncertain', sent, reason: 'timeout' }), timeoutMs)
      const current = this.current
      if (current?.connected && !current.dead) send(current)
      else this.waiters.add(send)
    })
  }

  /** Subscribes on the current socket; null when there is none (the `connected` hook subscribes later). */
  subscribe<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables, sink: SubscriptionSink<TResult>): SubscriptionHandle | null {
    const generation = this.current
    if (!generation?.connected || generation.dead || !generation.client) return null
    let closed = false
    const end = () => {
      closed = true
      generation.subscriptions.delete(handle)
    }
    const handle: SubscriptionHandle = {
      close: () => {
        if (closed) return
        end()
        if (!generation.dead) unsubscribe()
      },
    }
    const unsubscribe = generation.client.subscribe<TResult>(payloadOf(document, variables), {
      next: (result) => {
        if (!closed && !generation.dead) sink.next(result)
      },
      error: (error) => {
        if (closed || generation.dead) return
        end()
        sink.error(Array.isArray(error) ? (error as GraphQLFormattedError[]) : undefined)
      },
      complete: () => {
        if (closed || generation.dead) return
        end()
        sink.complete()
      },
    })
    generation.subscriptions.add(handle)
    return handle
  }

  /** dispose(): completes every subscription, settles every operation, closes the socket, never reconnects. */
  stop(): void {
    if (this.stopped && !this.current) return
    this.stopped = true
    if (this.retryTimer !== undefined) this.options.timers.clear(this.retryTimer)
    if (this.stableTimer !== undefined) this.options.timers.clear(this.stableTimer)
    this.retryTimer = this.stableTimer = undefined
    const generation = this.current
    this.current = null
    if (generation && !generation.dead) {
      for (const subscription of [...generation.subscriptions]) subscription.close()
      generation.dead = true
      this.clearPongTimer(generation)
      for (const operation of [...generation.operations]) operation.interrupt(true)
      disposeQuietly(generation.client)
    }
    for (const waiter of [...this.waiters]) waiter(null)
    this.setConnection({ status: 'closed' })
  }

  /** Entries held (tests prove dispose frees them). */
  tableSizes() {
    return {
      waiters: this.waiters.size,
      operations: this.current?.operations.size ?? 0,
      subscriptions: this.current?.subscriptions.size ?? 0,
      timers: (this.retryTimer !== undefined ? 1 : 0) + (this.stableTimer !== undefined ? 1 : 0) + (this.current?.pongTimer !== undefined ? 1 : 0),
    }
  }
}

export const defaultWsClientFactory: WsClientFactory = (options) => createClient(options)
