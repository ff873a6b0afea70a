import { randomUUID } from 'node:crypto'
import { RequestError } from '@agentclientprotocol/sdk'
import type { Logger } from '../observability/logger.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import { OwnershipLostError, type Store } from '../store/store.ts'
import { setSessionError, updateSession } from '../store/sessions.ts'
import { closeTurn, markPromptDispatched, openTurns } from '../store/turns.ts'
import { cancelPendingRequests } from '../store/messages.ts'
import type { SessionState } from '../summary/types.ts'
import type { AgentInput, AgentProcess } from './agent-process.ts'
import type { SessionErrorData } from './extensions.ts'
import { agentErrorReason } from './agent-reasons.ts'
import { PREVIEW_MAX_BYTES, truncateUtf8 } from '../summary/bounds.ts'
import type { SessionCoalescer } from './coalescer.ts'
import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import type { AgentMetrics } from './agent-metrics.ts'
import { errorFields } from '../observability/error-fields.ts'
import { AcpUpdates } from './acp-updates.ts'
import { SessionFence } from './session-fence.ts'

/**
 * The live side of one session: its agent process, its prompt queue, its turn in flight, and the
 * lifecycle from the first dispatch to stop, crash, failure or takeover. Consumes the agent's
 * handoff strictly in order; what the agent says is translated into store writes and session
 * events by AcpUpdates; both write only through the SessionFence (nothing once it may not own the session).
 */
export class SessionRuntime {
  readonly #fence: SessionFence
  readonly #updates: AcpUpdates
  #turnId: string | undefined
  #queue: { turnId: string; text: string }[] = []
  /** Every turn ever queued here: a prompt both refilled from the store and enqueued by its request is queued once. */
  readonly #queued = new Set<string>()
  #finished = false
  #dispatched = 0
  readonly #consumed: Promise<void>
  #markEnded!: () => void
  /** Resolves once the runtime is over and its manager has forgotten it. */
  readonly ended = new Promise<void>((resolve) => (this.#markEnded = resolve))

  constructor(
    readonly sessionId: string,
    readonly agent: AgentProcess,
    private readonly deps: {
      store: Store
      pubsub: PubSub
      logger: Logger
      metrics: AgentMetrics
      scheduler?: Scheduler
      /**
       * This instance still holds its lease by its own clock. Once it does not (a stall or an
       * outage past it), another instance may own the session: nothing more is written or published.
       */
      leaseHeld?: () => boolean
      /** Called once the runtime is over (stopped or crashed), so the manager forgets it. */
      onFinished: (runtime: SessionRuntime) => void
    },
  ) {
    this.#fence = new SessionFence(sessionId, {
      pubsub: deps.pubsub,
      logger: deps.logger,
      scheduler: deps.scheduler ?? realScheduler,
      leaseHeld: deps.leaseHeld,
      onOwnershipLost: () =>
        this.abandon().catch((error: unknown) =>
          deps.logger.warn({ sessionId, action: 'agent.stop', ...errorFields(error) }, 'agent stop failed'),
        ),
    })
    this.#updates = new AcpUpdates({
      store: deps.store,
      logger: deps.logger,
      metrics: deps.metrics,
      scheduler: deps.scheduler,
      fence: this.#fence,
      currentTurn: () => this.#turnId,
    })
    this.#consumed = this.#consume()
  }

  /** The session's stream: text chunks batched into message writes (benchmarks read its stats). */
  get coalescer(): SessionCoalescer {
    return this.#updates.coalescer
  }

  get busy(): boolean {
    return this.#turnId !== undefined
  }

  /** Prompts this runtime sent to its agent (per instance: tests prove a prompt went out once, and where). */
  get dispatchedPrompts(): number {
    return this.#dispatched
  }

  /** True once the runtime is over (or ending): it takes no more prompts. */
  get finished(): boolean {
    return this.#finished
  }

  /**
   * Queues a prompt; it is dispatched when no turn of this session is in flight. False when the
   * runtime is ending: nobody would drain the queue, so the caller must use a new runtime.
   */
  enqueuePrompt(turnId: string, text: string): boolean {
    return this.restorePrompts([{ turnId, text }])
  }

  /**
   * Queues prompts stored as queued (in the order given, after those already queued here; one
   * already queued here is skipped): the queue lives in memory, so a relaunched agent's runtime
   * is refilled from the store. False when the runtime is ending.
   */
  restorePrompts(prompts: readonly { turnId: string; text: string }[]): boolean {
    if (this.#finished) return false
    for (const prompt of prompts) {
      if (this.#queued.has(prompt.turnId)) continue
      this.#queued.add(prompt.turnId)
      this.#queue.push({ turnId: prompt.turnId, text: prompt.text })
    }
    this.#dispatchNext().catch((error: unknown) =>
      error instanceof OwnershipLostError
        ? this.#fence.ownershipLost()
        : this.#failed('prompt_dispatch_failed', 'The prompt could not be dispatched: a database write failed.', error),
    )
    return true
  }

  async respond(pendingId: string, answer: { optionId?: string; text?: string }): Promise<boolean> {
    return this.#updates.respond(pendingId, answer)
  }

  /** stopSession / deleteSession / shutdown: everything pending is written first. */
  async stop(finalState: SessionState | null): Promise<void> {
    await this.coalescer.flush()
    await this.agent.cancel()
    await this.agent.stop()
    await this.#consumed
    await this.#finish(finalState, 'cancelled')
  }

  /**
   * Another instance owns the session now (this one stalled past its lease): the agent ends and
   * nothing more of this runtime reaches the store or the pub/sub; the new owner has recovered
   * the session's records.
   */
  async abandon(): Promise<void> {
    this.#fence.markAbandoned()
    if (this.#finished) return
    this.#finished = true
    this.#updates.abandon()
    this.#queue = []
    this.#turnId = undefined
    try {
      await this.agent.stop()
    } finally {
      this.deps.metrics.sessionEnded(this.sessionId, this.coalescer.stats, this.deps.logger)
      this.deps.onFinished(this)
      this.#markEnded()
    }
  }

  async #dispatchNext(): Promise<void> {
    const next = await this.#claimNext()
    if (!next) return
    await this.#setState('RUNNING')
    this.#fence.publish({ type: 'TurnStarted', sessionId: this.sessionId, turnId: next.turnId })
    this.#dispatched++
    this.agent.prompt(next.text).then(
      (response) => this.agent.handoff.push({ type: 'turnEnd', turnId: next.turnId, response }),
      (error: unknown) => this.agent.handoff.push({ type: 'turnEnd', turnId: next.turnId, error }),
    )
  }

  /**
   * The next queued prompt this runtime may send, its turn now the one in flight. The dispatch is
   * recorded before the prompt goes out, and only once per prompt whoever tries: one already
   * attempted (here, or by an earlier owner) may have reached an agent, so it is skipped, never re-sent.
   */
  async #claimNext(): Promise<{ turnId: string; text: string } | undefined> {
    const { store } = this.deps
    for (;;) {
      // A stopping agent takes no more prompts: on a shutdown the queued ones stay stored for the next owner.
      if (this.#turnId || this.#finished || this.agent.stopping) return undefined
      const next = this.#queue.shift()
      if (!next) return undefined
      this.#turnId = next.turnId
      this.#updates.turnBegan()
      if (await this.#fence.write('turn.dispatched', () => markPromptDispatched(store, next.turnId))) return next
      this.#turnId = undefined
    }
  }

  async #consume(): Promise<void> {
    for await (const input of this.agent.handoff.drain()) {
      if (this.#fence.abandoned) continue
      try {
        await this.#handle(input)
      } catch (error) {
        if (error instanceof OwnershipLostError) {
          this.#fence.ownershipLost()
          continue
        }
        // Skipping the input would leave a turn that never ends (later prompts would never be
        // dispatched): the session ends visibly instead.
        await this.#failed('agent_input_failed', 'An agent update could not be stored: a database write failed.', error, input.type)
      }
    }
  }

  async #handle(input: AgentInput): Promise<void> {
    switch (input.type) {
      case 'update':
        return this.#updates.update(input.notification)
      case 'permission':
        return this.#updates.permission(input)
      case 'clarify':
        return this.#updates.clarify(input)
      case 'subagent':
        return this.#updates.subagent(input)
      case 'turnEnd':
        return this.#turnEnded(input)
      case 'exited':
        return this.#crashed(`Agent process exited (${input.signal ?? `code ${input.code}`}).`)
    }
  }

  async #turnEnded(input: Extract<AgentInput, { type: 'turnEnd' }>): Promise<void> {
    await this.coalescer.flush()
    // Only a JSON-RPC error is the agent's answer; anything else means the connection broke (the
    // process is gone or going, and the 'exited' input finalizes it).
    if (input.error !== undefined && !(input.error instanceof RequestError)) {
      if (!this.agent.stopping) await this.#crashed('Agent connection closed mid-turn.')
      return
    }
    const { store } = this.deps
    if (input.error instanceof RequestError) {
      // The agent refused the prompt (a model provider's error: bad key, rate limit, overload…)
      // and lives on: the turn ends with its reason, and the next prompt goes to the same agent.
      const error = sessionErrorOf(input.error)
      this.deps.logger.info({ sessionId: this.sessionId, action: 'turn.agent_error', code: error.code, rpcCode: input.error.code }, 'the agent answered the prompt with an error')
      const now = store.now()
      await this.#fence.write('session.error', () => setSessionError(store, this.sessionId, { ...error, stamp: randomUUID(), occurredAt: now }))
    }
    const stopReason = input.response?.stopReason ?? 'error'
    // The agent answered, so the turn ended, unless the answer acknowledges a cancel that cut it off.
    const turn = await this.#fence.write('turn.completed', () => this.#closeTurn(input.turnId, stopReason, stopReason === 'cancelled'))
    this.#fence.publish({ type: 'TurnCompleted', sessionId: this.sessionId, turnId: turn.id })
    this.#turnId = undefined
    if (!this.agent.stopping) await this.#setState('WAITING_FOR_INPUT')
    await this.#dispatchNext()
  }

  async #crashed(reason: string): Promise<void> {
    if (this.#finished || this.agent.stopping) return
    this.deps.logger.warn({ sessionId: this.sessionId, action: 'agent.crash' }, reason)
    await this.#endFailed('agent_crashed', reason, 'crashed')
  }

  /** A write this runtime depends on failed for good: the session ends FAILED with an error. */
  async #failed(code: string, reason: string, error: unknown, input?: string): Promise<void> {
    if (this.#finished) return
    this.deps.logger.error({ sessionId: this.sessionId, action: 'session.failed', code, input, ...errorFields(error) }, reason)
    await this.#endFailed(code, reason, code)
  }

  async #endFailed(code: string, reason: string, stopReason: string): Promise<void> {
    await this.#fence.bestEffort('session.error', () =>
      setSessionError(this.deps.store, this.sessionId, { code, message: reason, stamp: randomUUID(), occurredAt: this.deps.store.now() }),
    )
    this.agent.stop().catch((error: unknown) =>
      this.deps.logger.warn({ sessionId: this.sessionId, action: 'agent.stop', ...errorFields(error) }, 'agent stop failed'),
    )
    await this.#finish('FAILED', stopReason)
  }

  /**
   * The runtime is over. Whatever its final writes do, the manager forgets it, so the next
   * prompt of the session relaunches an agent instead of queueing behind this one.
   */
  async #finish(state: SessionState | null, stopReason: string): Promise<void> {
    if (this.#finished) return
    this.#finished = true
    try {
      await this.coalescer.flush()
      this.#updates.cancelOpenRequests()
      this.#queue = []
      if (state !== null) await this.#recordFinalState(state, stopReason)
    } finally {
      this.#turnId = undefined
      this.deps.metrics.sessionEnded(this.sessionId, this.coalescer.stats, this.deps.logger)
      this.deps.onFinished(this)
      this.#markEnded()
    }
  }

  /** Each step on its own: a turn that cannot be completed must not keep the session's state from being written. */
  async #recordFinalState(state: SessionState, stopReason: string): Promise<void> {
    const { store } = this.deps
    const open = (await this.#fence.bestEffort('turns.open', () => openTurns(store, this.sessionId))) ?? []
    for (const turn of open)
      if (await this.#fence.bestEffort('turn.completed', () => this.#closeTurn(turn.id, stopReason, true)))
        this.#fence.publish({ type: 'TurnCompleted', sessionId: this.sessionId, turnId: turn.id })
    await this.#fence.bestEffort('requests.cancelled', () => cancelPendingRequests(store, this.sessionId))
    if (await this.#fence.bestEffort('session.state', () => updateSession(store, this.sessionId, { state, activeSubagentCount: 0, backgroundWork: false })))
      this.#publishState(state)
  }

  /** Ends the turn with its open messages; each final status reaches open clients as a MessageUpdated. */
  async #closeTurn(turnId: string, stopReason: string, interrupted: boolean) {
    const { turn, messages } = await closeTurn(this.deps.store, turnId, { stopReason, interrupted })
    // Only the status changed: followers of appends keep their copy of the content.
    for (const m of messages)
      this.#fence.publish({ type: 'MessageUpdated', sessionId: this.sessionId, messageId: m.id, version: m.version, contentUnchanged: true })
    return turn
  }

  async #setState(state: SessionState): Promise<void> {
    await this.#fence.write('session.state', () => updateSession(this.deps.store, this.sessionId, { state }))
    this.#publishState(state)
  }

  #publishState(state: string): void {
    this.#fence.publish({ type: 'SessionStateChanged', sessionId: this.sessionId, state })
  }
}

/**
 * The session error of a prompt the agent answered with a JSON-RPC error: the code an agent of
 * this product names in its error data (the mock's scripted failures), else `agent_error`; the
 * message is the agent's own reason, bounded.
 */
function sessionErrorOf(error: RequestError): { code: string; message: string } {
  const data = error.data as Partial<SessionErrorData> | undefined
  const named = typeof data?.code === 'string' && data.code.length > 0 ? data.code : undefined
  // An agent that names its error code says what it is: its message stands as it wrote it.
  if (named) return { code: named, message: truncateUtf8(error.message, PREVIEW_MAX_BYTES) }
  return { code: 'agent_error', message: agentErrorReason(error) }
}
