import { randomUUID } from 'node:crypto'
import type { AgentProfile } from '../config/config.ts'
import type { Logger } from '../observability/logger.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import { ownedBy, type Store } from '../store/store.ts'
import type { AgentWatchdog } from './watchdog/agent-watchdog.ts'
import { OncePerKey } from '../util/once-per-key.ts'
import { findUserMessage, insertPrompt, promptSession } from '../store/prompts.ts'
import { clearInterruption, clearSessionError, createSession, deleteSession, findSession, getSession, updateSession } from '../store/sessions.ts'
import { clearLaunchError } from '../store/launch-errors.ts'
import { findPendingRequest, updateMessage } from '../store/messages.ts'
import type { AgentProcess } from './agent-process.ts'
import type { AgentMetrics } from './agent-metrics.ts'
import type { Scheduler } from '../util/scheduler.ts'
import { SessionRuntime } from './session-runtime.ts'
import { closeQueuedPrompts, queuedPrompts } from '../store/turns.ts'
import { launchNewAgent, publishedFields, relaunchAgent } from './session-launch.ts'
import { answeredStatus, storedPermissionOptions, type PermissionOption } from './agent-publications.ts'
import { parseMetadata } from './tool-call-detail.ts'
import { echoed } from '../errors.ts'
import { notASessionOfTask, replayOf, SessionOperationError, type PromptInput } from './session-operation-error.ts'

/** Runtimes a prompt may be handed to before acceptPrompt gives up (each one ended under it). */
const MAX_DISPATCH_ATTEMPTS = 3

const RESUMABLE = new Set(['CANCELLED', 'FAILED', 'COMPLETED', 'WAITING_FOR_INPUT', 'IDLE', 'CREATED'])

/**
 * Sessions whose agent opening them relaunches: those left ready for input. A session that was
 * stopped, completed or failed stays so until the user prompts or resumes it; one STARTING or
 * RUNNING without an owner is recovered (to WAITING_FOR_INPUT) when it is claimed.
 */
export const OPENS_AGENT: ReadonlySet<string> = new Set(['WAITING_FOR_INPUT', 'IDLE'])

/**
 * Sessions and their agents: launch, prompt (idempotent by client message id), answer pending
 * requests, stop, resume, delete. One AgentProcess per live session, on this instance.
 */
export class SessionService {
  readonly #runtimes = new Map<string, SessionRuntime>()
  readonly #launching = new OncePerKey<SessionRuntime>()

  constructor(
    private readonly deps: {
      store: Store
      pubsub: PubSub
      logger: Logger
      metrics: AgentMetrics
      profiles: Map<string, AgentProfile>
      scheduler?: Scheduler
      /** The instance a new session's agent runs on (it owns the session from the start). */
      instanceId?: string
      /** Ends this instance's agents when it stalls past its lease or dies (absent: agents end with their stdin only). */
      watchdog?: AgentWatchdog
      /** This instance still holds its lease by its own clock: a runtime writes nothing once it does not. */
      leaseHeld?: () => boolean
    },
  ) {
    // Every write a runtime makes is conditional on this instance still owning its session.
    this.#runtimeStore = deps.instanceId ? ownedBy(deps.store, deps.instanceId) : deps.store
  }

  readonly #runtimeStore: Store

  /** Sessions whose agent runs on this instance. */
  liveSessionIds(): string[] {
    return [...this.#runtimes.keys()]
  }

  runtime(sessionId: string): SessionRuntime | undefined {
    return this.#runtimes.get(sessionId)
  }

  /** Launches an agent for the task. Failures before a session exists become the task's launch error. */
  async startSession(input: { taskId: string; agentProfile: string; prompt?: string | null; clientMessageId?: string | null }) {
    const { store } = this.deps
    const { task, agent, sessionId, cwd } = await launchNewAgent(this.deps, input)
    const session = await createSession(store, {
      id: sessionId,
      taskId: task.id,
      agentProfile: input.agentProfile,
      state: 'STARTING',
      workingDirectory: cwd,
      ownerInstanceId: this.deps.instanceId,
    })
    await updateSession(store, session.id, { acpSessionId: agent.acpSessionId, ...publishedFields(agent) })
    this.#attach(session.id, agent)
    await clearLaunchError(store, task.id)
    let ready = await updateSession(store, session.id, { state: 'WAITING_FOR_INPUT' })
    this.#publishState(session.id, 'WAITING_FOR_INPUT')
    if (input.prompt) {
      // The session was created just now, for this task: the prompt's preconditions hold.
      await this.acceptPrompt({ taskId: task.id, sessionId: session.id, clientMessageId: input.clientMessageId ?? randomUUID(), content: input.prompt })
      ready = await getSession(store, session.id)
    }
    return ready
  }

  #attach(sessionId: string, agent: AgentProcess): SessionRuntime {
    const runtime = new SessionRuntime(sessionId, agent, {
      ...this.deps,
      store: this.#runtimeStore,
      onFinished: (finished) => {
        if (this.#runtimes.get(sessionId) === finished) this.#runtimes.delete(sessionId)
      },
    })
    this.#runtimes.set(sessionId, runtime)
    return runtime
  }

  /**
   * The runtime of a session, relaunching its agent on demand (after a restart or a stop): that
   * records a lifecycle-only turn, which moves no activity time.
   */
  async #ensureRuntime(sessionId: string): Promise<SessionRuntime> {
    const live = this.#runtimes.get(sessionId)
    if (live) return live
    return this.#launching.run(sessionId, () => this.#relaunch(sessionId))
  }

  async #relaunch(sessionId: string): Promise<SessionRuntime> {
    const agent = await relaunchAgent(this.deps, sessionId, (state) => this.#publishState(sessionId, state))
    // The queue lives in the runtime's memory: prompts an earlier agent of the session (on this
    // process or a dead one) left queued in the store come first, in the order they were accepted.
    // Read before the runtime is attached and queued in the same step: a request reaches the
    // runtime only once it is attached, so a prompt accepted through it comes after these.
    const stored = await queuedPrompts(this.deps.store, sessionId)
    const runtime = this.#attach(sessionId, agent)
    runtime.restorePrompts(stored)
    return runtime
  }

  /**
   * Recovery (restart, takeover) kept these sessions' queued prompts: each is dispatched here,
   * once and in order, on a relaunched agent. In the background: nobody waits for the launches;
   * a failure is logged, and a session whose agent cannot start (FAILED) closes its queued prompts,
   * which nobody can run any more.
   */
  dispatchStoredPrompts(sessionIds: readonly string[]): void {
    for (const sessionId of sessionIds)
      this.#dispatchStored(sessionId).catch((error: unknown) =>
        this.deps.logger.warn({ err: error, sessionId, action: 'session.dispatch_queued' }, 'dispatching the queued prompts of a recovered session failed'),
      )
  }

  async #dispatchStored(sessionId: string): Promise<void> {
    const live = this.#runtimes.get(sessionId)
    if (live) {
      live.restorePrompts(await queuedPrompts(this.deps.store, sessionId))
      return
    }
    const session = await findSession(this.deps.store, sessionId)
    // Deleted, stopped or failed meanwhile: those prompts are not this path's to send.
    if (!session || !OPENS_AGENT.has(session.state) || (this.deps.instanceId && session.ownerInstanceId !== this.deps.instanceId)) return
    try {
      await this.#ensureRuntime(sessionId)
    } catch (error) {
      const after = await findSession(this.deps.store, sessionId)
      if (after?.state === 'FAILED')
        for (const turn of await closeQueuedPrompts(this.deps.store, sessionId, 'agent_boot_failed'))
          this.deps.pubsub.publish('session', sessionId, { type: 'TurnCompleted', sessionId, turnId: turn.id }).catch(() => undefined)
      throw error
    }
  }

  /**
   * Accepts a user prompt on the session's owner and hands it to the session's agent (relaunched
   * when none runs). Its preconditions (the client id not used before, the session one of the
   * task) were checked by the caller, SessionCommands.sendPrompt, before routing it here.
   * Idempotent by client message id, scoped to the task's workspace: of concurrent requests with
   * one id only the first is stored and dispatched; the others replay it (CONFLICT in another task).
   */
  async acceptPrompt(input: PromptInput) {
    const { store } = this.deps
    // Read once, before a relaunch: only recovery sets a session's interruption, and it runs
    // before the session is this instance's (startup, takeover), never while it is.
    const session = await promptSession(store, input.sessionId)
    if (!session) throw notASessionOfTask(input) // deleted since it was checked
    if (session.state === 'STARTING' && !this.#runtimes.has(session.id) && !this.#launching.has(session.id))
      throw new SessionOperationError('CONFLICT', 'The session is starting on another server instance.')
    // The agent is relaunched before the prompt is stored, so the relaunch's lifecycle turn
    // starts before the user's turn and never becomes the session's current turn.
    let runtime = await this.#ensureRuntime(session.id)
    const accepted = await insertPrompt(store, { clientMessageId: input.clientMessageId, session, content: input.content })
    if (!accepted) {
      // The id is stored already: a concurrent request with the same id (here or on another
      // instance) won the race, or it was used before (startSession's prompt is not checked).
      const winner = await findUserMessage(store, input.taskId, input.clientMessageId)
      if (!winner) throw new SessionOperationError('CONFLICT', 'The message id is being used by another request.')
      return replayOf(winner, input)
    }
    this.deps.pubsub
      .publish('session', session.id, { type: 'MessageAdded', sessionId: session.id, messageId: accepted.message.id })
      .catch(() => undefined)
    // A runtime that ended meanwhile (crash, failed write) drains nothing: relaunch and queue there.
    for (let attempt = 1; !runtime.enqueuePrompt(accepted.turn.id, input.content); attempt++) {
      if (attempt === MAX_DISPATCH_ATTEMPTS) throw new SessionOperationError('CONFLICT', 'The agent keeps ending; resume the session.')
      await runtime.ended
      runtime = await this.#ensureRuntime(session.id)
    }
    return { message: accepted.message, replayed: false }
  }

  async respond(sessionId: string, pendingId: string, kind: 'PERMISSION_REQUEST' | 'CLARIFICATION', answer: { optionId?: string; text?: string }) {
    const { store } = this.deps
    const request = await findPendingRequest(store, sessionId, pendingId)
    if (!request || request.kind !== kind) throw new SessionOperationError('NOT_FOUND', `No ${kind === 'CLARIFICATION' ? 'clarification' : 'permission request'} ${echoed(pendingId)} in session ${sessionId}.`)
    if (request.status !== 'PENDING') throw new SessionOperationError('CONFLICT', `Request ${pendingId} is already ${request.status}.`)
    // A permission is answered with one of the agent's own options, passed on as chosen ("always" included).
    const option = kind === 'PERMISSION_REQUEST' ? chosenOption(request.metadata, answer.optionId) : undefined
    const runtime = this.#runtimes.get(sessionId)
    if (!runtime || !(await runtime.respond(pendingId, answer)))
      throw new SessionOperationError('CONFLICT', 'The agent that asked is no longer running; resume the session.')
    const status = option ? answeredStatus(option) : 'ANSWERED'
    const updated = await updateMessage(store, request.id, { status })
    this.deps.pubsub
      .publish('session', sessionId, { type: 'MessageUpdated', sessionId, messageId: updated.id, version: updated.version })
      .catch(() => undefined)
    return updated
  }

  async stopSession(sessionId: string) {
    const runtime = this.#runtimes.get(sessionId)
    if (runtime) await runtime.stop('CANCELLED')
    else {
      await updateSession(this.deps.store, sessionId, { state: 'CANCELLED', activeSubagentCount: 0 })
      this.#publishState(sessionId, 'CANCELLED')
    }
    return getSession(this.deps.store, sessionId)
  }

  async resumeSession(sessionId: string) {
    const session = await getSession(this.deps.store, sessionId)
    if (!this.#runtimes.has(sessionId)) {
      if (!RESUMABLE.has(session.state)) throw new SessionOperationError('CONFLICT', `A ${session.state} session cannot be resumed.`)
      await this.#ensureRuntime(sessionId)
    }
    // Also when an agent already runs (an opener or a queued prompt relaunched it): resuming is the user's answer to the cut.
    await clearInterruption(this.deps.store, sessionId)
    return getSession(this.deps.store, sessionId)
  }

  /**
   * Someone opened the session: its agent is relaunched here, as a prompt would (a lifecycle-only
   * turn), when the session waits for input and no agent runs for it. The launch runs on in the
   * background (concurrent openers share it); a failure is logged, and one of the agent becomes
   * the session's error as for any relaunch.
   */
  async openSession(sessionId: string): Promise<void> {
    if (this.#runtimes.has(sessionId) || this.#launching.has(sessionId)) return
    const session = await findSession(this.deps.store, sessionId)
    if (!session || !OPENS_AGENT.has(session.state)) return
    this.#ensureRuntime(sessionId).catch((error: unknown) =>
      this.deps.logger.warn({ err: error, sessionId, action: 'session.open' }, 'relaunching the agent of an opened session failed'),
    )
  }

  async deleteSession(sessionId: string) {
    const runtime = this.#runtimes.get(sessionId)
    if (runtime) await runtime.stop(null)
    await deleteSession(this.deps.store, sessionId)
  }

  async dismissSessionError(sessionId: string) {
    const session = await clearSessionError(this.deps.store, sessionId)
    this.#publishState(sessionId, session.state)
    return session
  }

  /** Moving a task to a terminal step completes its sessions (each on its owner: see SessionCommands). */
  async completeSession(sessionId: string) {
    const runtime = this.#runtimes.get(sessionId)
    if (runtime) await runtime.stop('COMPLETED')
    else await updateSession(this.deps.store, sessionId, { state: 'COMPLETED' })
  }

  /** Another instance owns these sessions now: their agents end here, writing nothing more. */
  async abandon(sessionIds: readonly string[]): Promise<void> {
    await Promise.allSettled(this.#launching.inFlight((id) => sessionIds.includes(id)))
    await Promise.allSettled(sessionIds.map((id) => this.#runtimes.get(id)?.abandon()))
  }

  /** Shutdown: pending content is written, then every agent process ends. */
  async shutdown(): Promise<void> {
    await Promise.allSettled(this.#launching.inFlight())
    await Promise.allSettled([...this.#runtimes.values()].map((r) => r.stop(null)))
  }

  #publishState(sessionId: string, state: string) {
    this.deps.pubsub.publish('session', sessionId, { type: 'SessionStateChanged', sessionId, state }).catch(() => undefined)
  }
}

/** The option of a permission request the user chose; anything but one of the agent's option ids is BAD_USER_INPUT. */
function chosenOption(metadata: string | null, optionId: string | undefined): PermissionOption {
  const options = storedPermissionOptions(parseMetadata(metadata))
  const option = options.find((o) => o.id === optionId)
  if (!option) throw new SessionOperationError('BAD_USER_INPUT', `optionId must be one of: ${options.map((o) => echoed(o.id)).join(', ')}.`, { field: 'optionId' })
  return option
}
