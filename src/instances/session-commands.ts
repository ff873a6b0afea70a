import { OPENS_AGENT, type SessionService } from '../agents/session-service.ts'
import { notASessionOfTask, replayOf, SessionOperationError, type PromptInput } from '../agents/session-operation-error.ts'
import type { GitMonitor } from '../git/monitor.ts'
import type { Logger } from '../observability/logger.ts'
import { findMessage } from '../store/messages.ts'
import { findUserMessage } from '../store/prompts.ts'
import { findSession, getSession, gitOfSessions, unfinishedSessionsOfTask } from '../store/sessions.ts'
import type { Store } from '../store/store.ts'
import { claimSession, instanceIsLive, LIVE_SESSION_STATES, ownerOf, type ClaimedSession, type SessionOwner } from '../store/instances.ts'
import type { CommandBus } from './command-bus.ts'
import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import { CLAIMS_OWNERSHIP, sessionOf, type CommandOutcome, type CommandResult, type SessionCommand } from './commands.ts'
import type { InstanceMetrics } from './instance-metrics.ts'

export interface SessionCommandsDeps {
  store: Store
  service: SessionService
  git: GitMonitor
  bus: CommandBus
  instanceId: string
  logger: Logger
  metrics: InstanceMetrics
  /** How long a caller waits for a session's owner, or for a takeover of it, before UNAVAILABLE. */
  forwardTimeoutMs: number
  /** How often a waiting caller checks that the owner's lease still holds. */
  ownerCheckMs: number
  /** False once this instance's own lease may have lapsed: it then answers forwarded commands as a non-owner. */
  leaseValid: () => boolean
  /** Recovers sessions claimed from a dead owner (their open turns end as after a restart). */
  recover: (sessions: ClaimedSession[]) => Promise<unknown>
  timers?: Scheduler
  now?: () => number
}

type Routed = { outcome: CommandOutcome; ranOn: string }

/**
 * Every session command enters here, on whichever instance the load balancer chose. The owner
 * of the session (the instance running its agent) carries it out: this instance when it owns the
 * session, or when nobody live does and the command needs an agent (the session is claimed, and
 * recovered first when its owner died); otherwise the owner, over the command bus, answered here
 * as if local. No reply and no takeover before the deadline: UNAVAILABLE, and the owner drops the
 * request when it sees it late, so nothing was done.
 */
export class SessionCommands {
  /** WebSocket connections of this instance whose Git focus is held by the owner elsewhere. */
  readonly #remoteFocus = new Map<string, string>()
  readonly #timers: Scheduler
  readonly #now: () => number

  constructor(private readonly deps: SessionCommandsDeps) {
    this.#timers = deps.timers ?? realScheduler
    this.#now = deps.now ?? Date.now
  }

  /** Starts listening for commands other instances forward to this one. */
  start(): void {
    this.deps.bus.start((command, from) => this.#serve(command, from))
  }

  /** A new session runs where it was started: this instance owns it from its first row. */
  startSession(input: Parameters<SessionService['startSession']>[0]) {
    return this.deps.service.startSession(input)
  }

  /**
   * A user prompt, its preconditions checked here, once, before it is routed (the owner accepts
   * it without checking them again): a retry of a stored client id is answered here, whoever owns
   * the session, and nothing is dispatched; a session of another task is never claimed,
   * recovered or asked about.
   */
  async sendPrompt(input: PromptInput) {
    const stored = await findUserMessage(this.deps.store, input.taskId, input.clientMessageId)
    if (stored) return replayOf(stored, input)
    const session = await findSession(this.deps.store, input.sessionId)
    if (!session || session.taskId !== input.taskId) throw notASessionOfTask(input)
    const result = await this.#run({ type: 'addMessage', input })
    return { message: await this.#message(result), replayed: result.replayed ?? false }
  }

  async respond(sessionId: string, pendingId: string, kind: 'PERMISSION_REQUEST' | 'CLARIFICATION', answer: { optionId?: string; text?: string }) {
    return this.#message(await this.#run({ type: 'respond', sessionId, pendingId, kind, answer }))
  }

  async stopSession(sessionId: string) {
    await this.#run({ type: 'stop', sessionId, finalState: 'CANCELLED' })
    return getSession(this.deps.store, sessionId)
  }

  async resumeSession(sessionId: string) {
    await this.#run({ type: 'resume', sessionId })
    return getSession(this.deps.store, sessionId)
  }

  async deleteSession(sessionId: string) {
    await this.#run({ type: 'delete', sessionId })
  }

  /**
   * A client opened the session (its caller has checked access): a session waiting for input
   * whose agent runs nowhere gets it relaunched on its owner, as a prompt would (claimed here
   * when its owner is gone). Resolves once the owner has started the launch, not when it ends.
   * `state` is the session's as the caller read it: other states cost nothing here.
   */
  async openSession(sessionId: string, state: string): Promise<void> {
    if (this.deps.service.runtime(sessionId)) return
    if (LIVE_SESSION_STATES.includes(state)) {
      // Starting or running on a live owner: its agent runs. Only a dead owner's session is claimed (and recovered) to relaunch it.
      const owner = await ownerOf(this.deps.store, sessionId)
      if (!owner || owner.ownerLive) return
    } else if (!OPENS_AGENT.has(state)) return
    await this.#run({ type: 'open', sessionId })
  }

  dismissSessionError(sessionId: string) {
    return this.deps.service.dismissSessionError(sessionId)
  }

  /** Moving a task to a terminal step completes its sessions, each on its owner. */
  async completeTaskSessions(taskId: string) {
    for (const session of await unfinishedSessionsOfTask(this.deps.store, taskId))
      await this.#run({ type: 'stop', sessionId: session.id, finalState: 'COMPLETED' })
  }

  async refreshSessionGit(sessionId: string) {
    await this.#run({ type: 'refreshGit', sessionId })
    return gitOfSessions(this.deps.store, [sessionId])
  }

  /** Git polling runs where the agent runs: the owner watches the session fast while this connection focuses it. */
  async focus(connectionId: string, sessionId: string): Promise<void> {
    this.unfocus(connectionId)
    const { ranOn } = await this.#route({ type: 'focus', sessionId, focusKey: connectionId }, undefined).then(this.#unwrap)
    if (ranOn !== this.deps.instanceId) this.#remoteFocus.set(connectionId, ranOn)
  }

  /** The connection ended or moved its focus. */
  unfocus(connectionId: string): void {
    this.deps.git.unfocus(connectionId)
    const owner = this.#remoteFocus.get(connectionId)
    if (!owner) return
    this.#remoteFocus.delete(connectionId)
    // Fire and forget: an owner that never hears of it drops the focus once this instance's lease ends.
    const pending = this.deps.bus.request(owner, { type: 'unfocus', focusKey: connectionId }, this.#now() + this.deps.forwardTimeoutMs)
    pending.reply.catch(() => undefined)
  }

  async #message(result: CommandResult) {
    const message = result.messageId ? await findMessage(this.deps.store, result.messageId) : null
    if (!message) throw new SessionOperationError('NOT_FOUND', 'The message no longer exists.')
    return message
  }

  async #run(command: SessionCommand): Promise<CommandResult> {
    return (await this.#route(command, undefined).then(this.#unwrap)).result
  }

  readonly #unwrap = ({ outcome, ranOn }: Routed): { result: CommandResult; ranOn: string } => {
    if (outcome.ok) return { result: outcome.result, ranOn }
    if ('notOwner' in outcome) throw new SessionOperationError('UNAVAILABLE', 'The instance running the session could not be reached.')
    if (outcome.error.code === 'INTERNAL_SERVER_ERROR') throw new Error('The owning instance failed to carry out the command.')
    throw new SessionOperationError(outcome.error.code as SessionOperationError['code'], outcome.error.message, outcome.error.details)
  }

  /** A command another instance forwarded: carried out if this instance owns the session (or may claim it), never forwarded on. */
  async #serve(command: SessionCommand, from: string): Promise<CommandOutcome> {
    this.deps.metrics.served.inc({ command: command.type })
    if (command.type === 'unfocus') {
      this.deps.git.unfocus(`${from}/${command.focusKey}`)
      return { ok: true, result: {} }
    }
    if (!this.deps.leaseValid()) return { ok: false, notOwner: true }
    const local = command.type === 'focus' ? { ...command, focusKey: `${from}/${command.focusKey}` } : command
    return (await this.#route(local, from)).outcome
  }

  /**
   * Finds who carries the command out and has it done. `forwardedBy` set: the command came from
   * that instance, and a live owner elsewhere is answered `notOwner` (the sender asks it itself).
   */
  async #route(command: SessionCommand, forwardedBy: string | undefined): Promise<Routed> {
    const me = this.deps.instanceId
    const sessionId = sessionOf(command)!
    const deadline = this.#now() + this.deps.forwardTimeoutMs
    for (;;) {
      const owner = await ownerOf(this.deps.store, sessionId)
      if (!owner || owner.ownerInstanceId === me) return { outcome: await this.#local(command), ranOn: me }
      if (!owner.ownerLive) {
        if (!CLAIMS_OWNERSHIP.has(command.type)) return { outcome: await this.#local(command), ranOn: me }
        if (await this.#claim(owner)) return { outcome: await this.#local(command), ranOn: me }
        continue // another instance claimed it first: ask again who
      }
      if (forwardedBy !== undefined) return { outcome: { ok: false, notOwner: true }, ranOn: me }
      if (this.#now() >= deadline) return this.#unavailable(command)
      const forwarded = await this.#forward(owner.ownerInstanceId!, command, deadline)
      if (forwarded === 'timeout') return this.#unavailable(command)
      if (forwarded === 'owner-lost') continue
      // The owner's row still looks live but it says otherwise (its lease just lapsed, or it moved): ask again shortly.
      if (!forwarded.ok && 'notOwner' in forwarded) {
        await new Promise<void>((resolve) => this.#timers.setTimeout(resolve, this.deps.ownerCheckMs))
        continue
      }
      return { outcome: forwarded, ranOn: owner.ownerInstanceId! }
    }
  }

  #unavailable(command: SessionCommand): Routed {
    this.deps.metrics.forwarded.inc({ command: command.type, outcome: 'unavailable' })
    this.deps.logger.warn({ action: 'instance.unavailable', command: command.type }, 'the owner of a session did not answer and nobody took it over')
    return {
      outcome: {
        ok: false,
        error: {
          code: 'UNAVAILABLE',
          message: 'The instance running the session could not be reached and no other instance took it over in time; nothing was done, a retry is safe.',
        },
      },
      ranOn: this.deps.instanceId,
    }
  }

  /** The session's owner is gone: this instance claims it, and recovers what the dead owner left open. */
  async #claim(owner: SessionOwner): Promise<boolean> {
    if (!(await claimSession(this.deps.store, owner.sessionId, this.deps.instanceId, owner.ownerInstanceId))) return false
    if (owner.ownerInstanceId !== null || LIVE_SESSION_STATES.includes(owner.state)) {
      await this.deps.recover([{ id: owner.sessionId, agentProfile: owner.agentProfile }])
      this.deps.metrics.takeovers.inc({ reason: 'on-demand' })
      this.deps.logger.info({ action: 'instance.takeover', sessionId: owner.sessionId, from: owner.ownerInstanceId, reason: 'on-demand' }, 'took over a session of an expired instance')
    }
    return true
  }

  /** Waits for the owner's reply, checking its lease meanwhile: a dead owner is given up on before the deadline. */
  async #forward(target: string, command: SessionCommand, deadline: number): Promise<CommandOutcome | 'timeout' | 'owner-lost'> {
    const started = performance.now()
    const pending = this.deps.bus.request(target, command, deadline)
    try {
      for (;;) {
        const next = await this.#raceCheck(pending.reply)
        if (next !== 'check') {
          if (next === 'timeout') return next // counted as unavailable by the caller
          this.deps.metrics.forwarded.inc({ command: command.type, outcome: next.ok ? 'ok' : 'error' })
          this.deps.metrics.forwardDuration.observe({ command: command.type }, (performance.now() - started) / 1000)
          return next
        }
        if (!(await instanceIsLive(this.deps.store, target))) return 'owner-lost'
      }
    } finally {
      pending.cancel()
    }
  }

  #raceCheck<T>(reply: Promise<T>): Promise<T | 'check'> {
    let timer: unknown
    const check = new Promise<'check'>((resolve) => (timer = this.#timers.setTimeout(() => resolve('check'), this.deps.ownerCheckMs)))
    return Promise.race([reply, check]).finally(() => this.#timers.clearTimeout(timer))
  }

  async #local(command: SessionCommand): Promise<CommandOutcome> {
    try {
      return { ok: true, result: await this.#execute(command) }
    } catch (error) {
      if (error instanceof SessionOperationError)
        return { ok: false, error: { code: error.code, message: error.message, details: error.details } }
      throw error
    }
  }

  async #execute(command: SessionCommand): Promise<CommandResult> {
    const { service, git } = this.deps
    switch (command.type) {
      case 'addMessage': {
        const { message, replayed } = await service.acceptPrompt(command.input)
        return { messageId: message.id, replayed }
      }
      case 'respond':
        return { messageId: (await service.respond(command.sessionId, command.pendingId, command.kind, command.answer)).id }
      case 'stop':
        if (command.finalState === 'COMPLETED') await service.completeSession(command.sessionId)
        else await service.stopSession(command.sessionId)
        return {}
      case 'resume':
        await service.resumeSession(command.sessionId)
        return {}
      case 'open':
        await service.openSession(command.sessionId)
        return {}
      case 'delete':
        await service.deleteSession(command.sessionId)
        return {}
      case 'refreshGit':
        await git.observeSession(command.sessionId)
        return {}
      case 'focus':
        git.focus(command.focusKey, command.sessionId)
        return {}
      case 'unfocus':
        git.unfocus(command.focusKey)
        return {}
    }
  }
}
