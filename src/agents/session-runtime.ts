import { randomUUID } from 'node:crypto'
import { RequestError, type SessionNotification } from '@agentclientprotocol/sdk'
import type { Logger } from '../observability/logger.ts'
import type { PubSub, SessionEventPayload } from '../pubsub/pubsub.ts'
import { OwnershipLostError, type Store } from '../store/store.ts'
import { clearSessionError, setSessionError, updateSession } from '../store/sessions.ts'
import { closeTurn, markPromptDispatched, openTurns } from '../store/turns.ts'
import type { SessionState } from '../summary/types.ts'
import type { AgentInput, AgentProcess } from './agent-process.ts'
import type { ClarifyResult, SessionErrorData } from './extensions.ts'
import { SessionCoalescer, type StreamAppend, type StreamKind } from './coalescer.ts'
import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import { appendMessageContent, cancelPendingRequests, findToolCallMessage, insertMessage, type NewMessage, updateMessage } from '../store/messages.ts'
import type { AgentMetrics } from './agent-metrics.ts'
import { retryWrite } from './retry-write.ts'
import { chunkCount } from './chunk-merge.ts'
import { errorFields } from '../observability/error-fields.ts'

const TOOL_STATUS: Record<string, string> = {
  pending: 'PENDING',
  in_progress: 'IN_PROGRESS',
  completed: 'COMPLETED',
  failed: 'FAILED',
}

type Responder =
  | { kind: 'PERMISSION_REQUEST'; respond: (optionId: string | null) => void }
  | { kind: 'CLARIFICATION'; respond: (answer: string | null) => void }

/**
 * The live side of one session: its agent process, its coalescer, its turn in flight. Consumes
 * the agent's handoff strictly in order and turns it into store writes (which feed the
 * projector) and session events (which feed session subscribers).
 */
export class SessionRuntime {
  readonly coalescer: SessionCoalescer
  #turnId: string | undefined
  #queue: { turnId: string; text: string }[] = []
  /** Every turn ever queued here: a prompt both refilled from the store and enqueued by its request is queued once. */
  readonly #queued = new Set<string>()
  #responders = new Map<string, Responder>()
  #subagents = new Set<string>()
  #agentSpokeThisTurn = false
  #finished = false
  /** Set when another instance took the session over: from then on this runtime writes nothing. */
  #abandoned = false
  #dispatched = 0
  readonly #consumed: Promise<void>
  readonly #scheduler: Scheduler
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
    this.coalescer = new SessionCoalescer(
      {
        create: (kind, text) => this.#createStreamMessage(kind, text),
        update: (messageId, append) => this.#appendStreamMessage(messageId, append),
      },
      (error) => {
        if (error instanceof OwnershipLostError) return this.#ownershipLost()
        deps.logger.error({ sessionId, action: 'coalescer.write', ...errorFields(error) }, 'stream write failed')
      },
      deps.scheduler,
    )
    this.#scheduler = deps.scheduler ?? realScheduler
    this.#consumed = this.#consume()
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
        ? this.#ownershipLost()
        : this.#failed('prompt_dispatch_failed', 'The prompt could not be dispatched: a database write failed.', error),
    )
    return true
  }

  async respond(pendingId: string, answer: { optionId?: string; text?: string }): Promise<boolean> {
    const responder = this.#responders.get(pendingId)
    if (!responder) return false
    this.#responders.delete(pendingId)
    if (responder.kind === 'PERMISSION_REQUEST') responder.respond(answer.optionId ?? null)
    else responder.respond(answer.text ?? null)
    return true
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
    this.#abandoned = true
    if (this.#finished) return
    this.#finished = true
    this.coalescer.discard()
    this.#queue = []
    this.#responders.clear()
    this.#subagents.clear()
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
    this.#publish({ type: 'TurnStarted', sessionId: this.sessionId, turnId: next.turnId })
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
      this.#agentSpokeThisTurn = false
      if (await this.#write('turn.dispatched', () => markPromptDispatched(store, next.turnId))) return next
      this.#turnId = undefined
    }
  }

  async #consume(): Promise<void> {
    for await (const input of this.agent.handoff.drain()) {
      if (this.#abandoned) continue
      try {
        await this.#handle(input)
      } catch (error) {
        if (error instanceof OwnershipLostError) {
          this.#ownershipLost()
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
        return this.#update(input.notification)
      case 'permission': {
        await this.coalescer.flush()
        const options = input.request.options.map((o) => ({ id: o.optionId, name: o.name, kind: o.kind }))
        const pendingId = await this.#pendingRequest('PERMISSION_REQUEST', input.request.toolCall.title ?? 'Permission', { options })
        this.#responders.set(pendingId, {
          kind: 'PERMISSION_REQUEST',
          respond: (optionId) =>
            input.respond({ outcome: optionId ? { outcome: 'selected', optionId } : { outcome: 'cancelled' } }),
        })
        return
      }
      case 'clarify': {
        await this.coalescer.flush()
        const pendingId = await this.#pendingRequest('CLARIFICATION', input.request.question, {})
        this.#responders.set(pendingId, {
          kind: 'CLARIFICATION',
          respond: (answer) =>
            input.respond((answer === null ? { outcome: 'cancelled' } : { outcome: 'answered', answer }) satisfies ClarifyResult),
        })
        return
      }
      case 'subagent': {
        if (input.notification.state === 'started') this.#subagents.add(input.notification.subagentId)
        else this.#subagents.delete(input.notification.subagentId)
        const count = this.#subagents.size
        await this.#write('session.subagents', () => updateSession(this.deps.store, this.sessionId, { activeSubagentCount: count }))
        return
      }
      case 'turnEnd':
        return this.#turnEnded(input)
      case 'exited':
        return this.#crashed(`Agent process exited (${input.signal ?? `code ${input.code}`}).`)
    }
  }

  async #update(notification: SessionNotification): Promise<void> {
    const update = notification.update
    if (!this.#agentSpokeThisTurn && this.#turnId) {
      // A newer agent response clears the session's previous recoverable error.
      this.#agentSpokeThisTurn = true
      await this.#write('session.error_cleared', () => clearSessionError(this.deps.store, this.sessionId))
    }
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
      case 'agent_thought_chunk': {
        const kind: StreamKind = update.sessionUpdate === 'agent_message_chunk' ? 'MESSAGE' : 'REASONING'
        if (update.content.type === 'text') {
          // A store slower than the agent holds the handoff here (and so the agent), not memory.
          await this.coalescer.room()
          const count = chunkCount(update)
          this.deps.metrics.chunkReceived(kind, count)
          this.coalescer.chunk(kind, update.content.text, update.messageId ?? undefined, count)
        }
        return
      }
      case 'tool_call': {
        await this.coalescer.flush()
        await this.#agentMessage({
          kind: 'TOOL_CALL',
          content: update.title,
          status: TOOL_STATUS[update.status ?? 'pending'] ?? 'PENDING',
          toolCallId: update.toolCallId,
          metadata: JSON.stringify({ kind: update.kind ?? 'other' }),
        })
        return
      }
      case 'tool_call_update': {
        await this.coalescer.flush()
        const existing = await findToolCallMessage(this.deps.store, this.sessionId, update.toolCallId)
        if (!existing) return
        this.#guard('tool call update')
        const message = await updateMessage(this.deps.store, existing.id, {
          ...(update.status && { status: TOOL_STATUS[update.status] ?? existing.status }),
          ...(update.title && { content: update.title }),
        })
        this.#publish({ type: 'MessageUpdated', sessionId: this.sessionId, messageId: message.id, version: message.version })
        return
      }
      case 'config_option_update': {
        const model = update.configOptions.find((o) => o.category === 'model' && o.type === 'select')
        if (!model || model.type !== 'select') return
        const options = (model.options as { value?: string; name: string }[]).filter((o) => typeof o.value === 'string')
        this.#guard('models')
        await updateSession(this.deps.store, this.sessionId, {
          currentModelId: model.currentValue,
          availableModels: options.map((o) => ({ id: o.value!, name: o.name })),
        })
        this.#publish({ type: 'SessionModelsUpdated', sessionId: this.sessionId })
        return
      }
      default:
        return
    }
  }

  async #turnEnded(input: Extract<AgentInput, { type: 'turnEnd' }>): Promise<void> {
    await this.coalescer.flush()
    if (input.error !== undefined && !(input.error instanceof RequestError && this.#isSessionError(input.error))) {
      // The connection broke: the process is gone or going. The 'exited' input finalizes it.
      if (!this.agent.stopping) await this.#crashed('Agent connection closed mid-turn.')
      return
    }
    const { store } = this.deps
    if (input.error instanceof RequestError) {
      const data = input.error.data as SessionErrorData
      const now = store.now()
      const message = input.error.message
      await this.#write('session.error', () =>
        setSessionError(store, this.sessionId, { code: data.code, message, stamp: randomUUID(), occurredAt: now }),
      )
    }
    const stopReason = input.response?.stopReason ?? 'error'
    // The agent answered, so the turn ended, unless the answer acknowledges a cancel that cut it off.
    const turn = await this.#write('turn.completed', () => this.#closeTurn(input.turnId, stopReason, stopReason === 'cancelled'))
    this.#publish({ type: 'TurnCompleted', sessionId: this.sessionId, turnId: turn.id })
    this.#turnId = undefined
    if (!this.agent.stopping) await this.#setState('WAITING_FOR_INPUT')
    await this.#dispatchNext()
  }

  #isSessionError(error: RequestError): boolean {
    const data = error.data as Partial<SessionErrorData> | undefined
    return typeof data?.code === 'string' && data.code.length > 0
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
    await this.#bestEffort('session.error', () =>
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
      for (const responder of this.#responders.values()) responder.respond(null)
      this.#responders.clear()
      this.#queue = []
      this.#subagents.clear()
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
    const open = (await this.#bestEffort('turns.open', () => openTurns(store, this.sessionId))) ?? []
    for (const turn of open)
      if (await this.#bestEffort('turn.completed', () => this.#closeTurn(turn.id, stopReason, true)))
        this.#publish({ type: 'TurnCompleted', sessionId: this.sessionId, turnId: turn.id })
    await this.#bestEffort('requests.cancelled', () => cancelPendingRequests(store, this.sessionId))
    if (await this.#bestEffort('session.state', () => updateSession(store, this.sessionId, { state, activeSubagentCount: 0, backgroundWork: false })))
      this.#publishState(state)
  }

  /** Ends the turn with its open messages; each final status reaches open clients as a MessageUpdated. */
  async #closeTurn(turnId: string, stopReason: string, interrupted: boolean) {
    const { turn, messages } = await closeTurn(this.deps.store, turnId, { stopReason, interrupted })
    // Only the status changed: followers of appends keep their copy of the content.
    for (const m of messages)
      this.#publish({ type: 'MessageUpdated', sessionId: this.sessionId, messageId: m.id, version: m.version, contentUnchanged: true })
    return turn
  }

  async #setState(state: SessionState): Promise<void> {
    await this.#write('session.state', () => updateSession(this.deps.store, this.sessionId, { state }))
    this.#publishState(state)
  }

  /**
   * Fencing, on this side: a write is made only while this runtime may still own its session
   * (never abandoned, the lease held by this instance's clock). The store checks ownership again
   * in the write itself, for a stall between this check and the write.
   */
  #guard(what: string): void {
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
  #ownershipLost(): void {
    if (this.#abandoned) return
    this.#abandoned = true
    this.deps.logger.warn({ sessionId: this.sessionId, action: 'session.ownership_lost' }, 'this instance no longer owns the session; its agent ends here without writing')
    this.abandon().catch((error: unknown) =>
      this.deps.logger.warn({ sessionId: this.sessionId, action: 'agent.stop', ...errorFields(error) }, 'agent stop failed'),
    )
  }

  /** A repeatable write, retried with backoff; the last failure is thrown. A fenced refusal is never retried. */
  async #write<T>(what: string, write: () => Promise<T>): Promise<T> {
    this.#guard(what)
    return retryWrite(write, {
      retryable: (error) => !(error instanceof OwnershipLostError),
      scheduler: this.#scheduler,
      onRetry: (error, attempt) =>
        this.deps.logger.warn({ sessionId: this.sessionId, action: 'store.retry', write: what, attempt, ...errorFields(error) }, 'store write failed, retrying'),
    })
  }

  /** Like #write, but a final failure is logged and yields undefined (the caller goes on). */
  async #bestEffort<T>(what: string, write: () => Promise<T>): Promise<T | undefined> {
    try {
      return await this.#write(what, write)
    } catch (error) {
      if (error instanceof OwnershipLostError) return void this.#ownershipLost()
      this.deps.logger.error({ sessionId: this.sessionId, action: 'store.gave_up', write: what, ...errorFields(error) }, 'store write failed for good')
      return undefined
    }
  }

  #publishState(state: string): void {
    this.#publish({ type: 'SessionStateChanged', sessionId: this.sessionId, state })
  }

  /** Stores an agent message of the current turn and announces it. */
  async #agentMessage(fields: Pick<NewMessage, 'kind' | 'content' | 'status' | 'pendingId' | 'toolCallId' | 'metadata'>) {
    this.#guard('message')
    const message = await insertMessage(this.deps.store, {
      id: randomUUID(),
      sessionId: this.sessionId,
      turnId: this.#turnId,
      author: 'AGENT',
      ...fields,
    })
    this.#publish({ type: 'MessageAdded', sessionId: this.sessionId, messageId: message.id })
    return message
  }

  async #pendingRequest(kind: Responder['kind'], content: string, metadata: object): Promise<string> {
    const pendingId = randomUUID()
    await this.#agentMessage({ kind, content, status: 'PENDING', pendingId, metadata: JSON.stringify(metadata) })
    return pendingId
  }

  async #createStreamMessage(kind: StreamKind, text: string): Promise<string> {
    return (await this.#agentMessage({ kind, content: text, status: 'IN_PROGRESS' })).id
  }

  /** Only the window's text crosses the store and the pub/sub: subscribers that follow appends never reread the content. */
  async #appendStreamMessage(messageId: string, append: StreamAppend): Promise<void> {
    this.#guard('stream append')
    const result = await appendMessageContent(this.deps.store, messageId, append.text)
    if (!result) return // deleted with its session meanwhile: nobody to tell
    this.deps.metrics.published()
    this.#publish({ type: 'MessageUpdated', sessionId: this.sessionId, messageId, version: result.version, append })
  }

  #publish(payload: SessionEventPayload): void {
    if (!this.#mayStillOwn) return
    this.deps.pubsub.publish('session', this.sessionId, payload).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, sessionId: this.sessionId }, 'session event publish failed')
    })
  }
}
