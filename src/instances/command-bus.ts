import { randomUUID } from 'node:crypto'
import type { Logger } from '../observability/logger.ts'
import { errorFields } from '../observability/error-fields.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import type { CommandOutcome, InstanceMessage, SessionCommand } from './commands.ts'
import { realScheduler, type Scheduler } from '../util/scheduler.ts'

export interface PendingRequest {
  requestId: string
  /** The owner's outcome, or 'timeout' once the deadline passed without one. */
  reply: Promise<CommandOutcome | 'timeout'>
  /** Stops waiting (the owner was found dead): the reply, should it still come, is ignored. */
  cancel(): void
}

/**
 * Request/reply between instances over the pub/sub: each instance listens on its own channel
 * (`instance:<id>`); a request names the sender, an id and a deadline, the reply comes back on
 * the sender's channel. Every pending request leaves the table on its reply, its timeout, its
 * cancel or the bus's close.
 */
export class CommandBus {
  readonly #pending = new Map<string, { settle: (outcome: CommandOutcome | 'timeout') => void; timer: unknown }>()
  #inbox: AsyncIterableIterator<InstanceMessage> | undefined
  #serving: Promise<void> | undefined
  #closed = false
  readonly #timers: Scheduler
  readonly #now: () => number

  constructor(
    private readonly deps: {
      pubsub: PubSub
      instanceId: string
      logger: Logger
      timers?: Scheduler
      now?: () => number
    },
  ) {
    this.#timers = deps.timers ?? realScheduler
    this.#now = deps.now ?? Date.now
  }

  /** Requests in flight from this instance. */
  get pendingRequests(): number {
    return this.#pending.size
  }

  /** Listens for requests (handled by `handle`) and for replies to this instance's requests. */
  start(handle: (command: SessionCommand, from: string) => Promise<CommandOutcome>): void {
    if (this.#inbox) return
    const inbox = this.deps.pubsub.subscribe('instance', this.deps.instanceId, { bufferLimit: 10_000 })
    this.#inbox = inbox
    this.#serving = (async () => {
      for await (const message of inbox) {
        if (message.kind === 'reply') this.#settle(message.requestId, message.outcome)
        else if (message.kind === 'request') this.#serve(message, handle)
      }
    })().catch((error: unknown) => this.deps.logger.error({ err: error, action: 'instance.inbox' }, 'instance inbox ended'))
  }

  /** Sends a command to `target`; its reply (or 'timeout' at `deadline`, epoch ms) settles the request. */
  request(target: string, command: SessionCommand, deadline: number): PendingRequest {
    const requestId = randomUUID()
    // Shutting down: nobody would read the reply, and a pending timer would hold the process.
    if (this.#closed) return { requestId, reply: Promise.resolve('timeout'), cancel: () => undefined }
    let settle!: (outcome: CommandOutcome | 'timeout') => void
    const reply = new Promise<CommandOutcome | 'timeout'>((resolve) => (settle = resolve))
    const timer = this.#timers.setTimeout(() => this.#settle(requestId, 'timeout'), Math.max(0, deadline - this.#now()))
    this.#pending.set(requestId, { settle, timer })
    const message: InstanceMessage = { kind: 'request', requestId, from: this.deps.instanceId, deadline, command }
    // A lost publish is a request nobody answers: the deadline ends it like any other silence.
    this.deps.pubsub.publish('instance', target, message).catch((error: unknown) =>
      this.deps.logger.warn({ err: error, action: 'instance.forward', target }, 'forwarding a command failed'),
    )
    return { requestId, reply, cancel: () => this.#settle(requestId, 'timeout') }
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const id of [...this.#pending.keys()]) this.#settle(id, 'timeout')
    await this.#inbox?.return?.()
    this.#inbox = undefined
    await this.#serving
  }

  #settle(requestId: string, outcome: CommandOutcome | 'timeout'): void {
    const pending = this.#pending.get(requestId)
    if (!pending) return // answered, timed out or cancelled already
    this.#pending.delete(requestId)
    this.#timers.clearTimeout(pending.timer)
    pending.settle(outcome)
  }

  #serve(request: Extract<InstanceMessage, { kind: 'request' }>, handle: (command: SessionCommand, from: string) => Promise<CommandOutcome>): void {
    // The sender has answered UNAVAILABLE by now ("nothing was done"): doing it late would be a lie.
    if (this.#now() >= request.deadline) {
      this.deps.logger.warn({ action: 'instance.request_expired', command: request.command.type, from: request.from }, 'dropped a forwarded command past its deadline')
      return
    }
    handle(request.command, request.from)
      .catch((error: unknown): CommandOutcome => {
        this.deps.logger.error({ ...errorFields(error), action: 'instance.handle', command: request.command.type }, 'a forwarded command failed')
        return { ok: false, error: { code: 'INTERNAL_SERVER_ERROR', message: 'Unexpected error.' } }
      })
      .then((outcome) =>
        this.deps.pubsub.publish('instance', request.from, { kind: 'reply', requestId: request.requestId, outcome }),
      )
      .catch((error: unknown) =>
        this.deps.logger.warn({ err: error, action: 'instance.reply', to: request.from }, 'replying to a forwarded command failed'),
      )
  }
}
