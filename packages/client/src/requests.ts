import { errorCode, TaskClientError } from './errors.js'
import { backoffMs, FATAL_CLOSE_CODES } from './socket-policy.js'
import type { Doc, Outcome, Timers, Transport } from './transport.js'
import type { ClientDiagnostic, ConnectionState } from './types.js'
import type { StoreApi } from 'zustand/vanilla'

/** Attempts of a query whose answer is uncertain (viewer, loadTaskSessions, refetches). */
const QUERY_ATTEMPTS = 3

/**
 * What the facade, the workspace feed and the visible sessions share: queries retried while their
 * answer is uncertain, mutations sent once, backoff sleeps, diagnostics, and the client's end
 * (after dispose every sleep resolves and every request is refused).
 */
export class Requests {
  #disposed = false
  /** Pending sleeps (backoff between attempts), resolved at dispose. */
  readonly #sleeps = new Map<unknown, () => void>()

  constructor(
    readonly transport: Transport,
    readonly timers: Timers,
    readonly random: () => number,
    readonly requestTimeoutMs: number,
    private readonly connection: StoreApi<ConnectionState>,
    private readonly onEvent: ((event: ClientDiagnostic) => void) | undefined,
  ) {}

  get disposed(): boolean {
    return this.#disposed
  }

  get pendingSleeps(): number {
    return this.#sleeps.size
  }

  emit(event: ClientDiagnostic): void {
    try {
      this.onEvent?.(event)
    } catch {
      // a diagnostics hook never breaks the client
    }
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#disposed) return resolve()
      const handle = this.timers.set(() => {
        this.#sleeps.delete(handle)
        resolve()
      }, ms)
      this.#sleeps.set(handle, resolve)
    })
  }

  closedError(): TaskClientError {
    const code = this.connection.getState().lastCloseCode
    return !this.#disposed && code !== undefined && FATAL_CLOSE_CODES.has(code)
      ? new TaskClientError('CLOSED', `The server refused the token (WebSocket close ${code}).`)
      : new TaskClientError('CLOSED', 'The task client is closed.')
  }

  assertUsable(): void {
    if (this.#disposed || this.transport.isStopped) throw this.closedError()
  }

  /** One operation over the transport, as it came: the caller decides what an uncertain answer means. */
  execute<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables): Promise<Outcome<TResult>> {
    return this.transport.execute(document, variables, this.requestTimeoutMs)
  }

  /** A query, retried while its answer is uncertain (each attempt waits for a socket). */
  async query<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables, stillWanted?: () => boolean): Promise<TResult> {
    for (let attempt = 0; ; attempt++) {
      this.assertUsable()
      const outcome = await this.execute(document, variables)
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
  async mutate<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables): Promise<TResult> {
    this.assertUsable()
    const outcome = await this.execute(document, variables)
    if (outcome.kind === 'data') return outcome.data
    if (outcome.kind === 'errors') throw TaskClientError.fromErrors(outcome.errors)
    if (outcome.kind === 'stopped') throw this.closedError()
    throw new TaskClientError('UNCERTAIN', 'The server did not confirm the request; it may or may not have been carried out.')
  }

  /** The client is disposed: every later request is refused, and every sleep resolves at once. */
  dispose(): void {
    this.#disposed = true
    for (const [handle, resolve] of this.#sleeps) {
      this.timers.clear(handle)
      resolve()
    }
    this.#sleeps.clear()
  }
}
