import type { Logger } from '../observability/logger.ts'
import type { PubSub, SessionEventPayload } from '../pubsub/pubsub.ts'
import { OwnershipLostError } from '../store/store.ts'
import { errorFields } from '../observability/error-fields.ts'
import type { Scheduler } from '../util/scheduler.ts'
import type { StageContext } from '../observability/tracing.ts'
import { retryWrite } from '../util/retry-write.ts'

/**
 * Fencing, on this side: the writes and publications of one session's runtime go out only while
 * it may still own its session (never abandoned, the lease held by this instance's clock). The
 * store checks ownership again in the write itself, for a stall between this check and the write.
 */
export class SessionFence {
  #abandoned = false

  constructor(
    readonly sessionId: string,
    private readonly deps: {
      pubsub: PubSub
      logger: Logger
      scheduler: Scheduler
      /** This instance still holds its lease by its own clock (absent: always). */
      leaseHeld?: () => boolean
      /** Another instance may own the session now: the runtime ends, its agent stopped. */
      onOwnershipLost: () => void
    },
  ) {}

  /** Set when another instance took the session over: from then on nothing is written or published. */
  get abandoned(): boolean {
    return this.#abandoned
  }

  markAbandoned(): void {
    this.#abandoned = true
  }

  /** Throws OwnershipLostError once writes may no longer go out. */
  guard(what: string): void {
    if (!this.#mayStillOwn) throw new OwnershipLostError(`${what} of session ${this.sessionId}`)
  }

  /** Not abandoned, and the lease held by this instance's clock: writes and publications may go out. */
  get #mayStillOwn(): boolean {
    return !this.#abandoned && (this.deps.leaseHeld?.() ?? true)
  }

  /**
   * Another instance may own the session now (this one stalled or lost the database past its
   * lease): the runtime ends as abandoned, its agent stopped, nothing more written or published.
   */
  ownershipLost(): void {
    if (this.#abandoned) return
    this.#abandoned = true
    this.deps.logger.warn({ sessionId: this.sessionId, action: 'session.ownership_lost' }, 'this instance no longer owns the session; its agent ends here without writing')
    this.deps.onOwnershipLost()
  }

  /** A repeatable write, retried with backoff; the last failure is thrown. A fenced refusal is never retried. */
  async write<T>(what: string, write: () => Promise<T>): Promise<T> {
    this.guard(what)
    return retryWrite(write, {
      retryable: (error) => !(error instanceof OwnershipLostError),
      scheduler: this.deps.scheduler,
      onRetry: (error, attempt) =>
        this.deps.logger.warn({ sessionId: this.sessionId, action: 'store.retry', write: what, attempt, ...errorFields(error) }, 'store write failed, retrying'),
    })
  }

  /** Like write, but a final failure is logged and yields undefined (the caller goes on). */
  async bestEffort<T>(what: string, write: () => Promise<T>): Promise<T | undefined> {
    try {
      return await this.write(what, write)
    } catch (error) {
      if (error instanceof OwnershipLostError) return void this.ownershipLost()
      this.deps.logger.error({ sessionId: this.sessionId, action: 'store.gave_up', write: what, ...errorFields(error) }, 'store write failed for good')
      return undefined
    }
  }

  /** A session event, published only while writes may go out; a failed publication is logged. */
  publish(payload: SessionEventPayload, trace?: StageContext): void {
    if (!this.#mayStillOwn) return
    this.deps.pubsub.publish('session', this.sessionId, payload, trace).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, sessionId: this.sessionId }, 'session event publish failed')
    })
  }
}
