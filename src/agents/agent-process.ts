import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import {
  client,
  ndJsonStream,
  RequestError,
  PROTOCOL_VERSION,
  type ClientConnection,
  type PromptResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk'
import type { AgentProfile } from '../config/config.ts'
import type { Logger } from '../observability/logger.ts'
import type { AgentWatchdog } from './watchdog/agent-watchdog.ts'
import { BoundedHandoff } from './bounded-handoff.ts'
import { chunkCount } from './chunk-merge.ts'
import { throttledInput } from './throttled-input.ts'
import { withinDeadline } from '../util/deadline.ts'
import { launchFailureReason, StderrTail } from './agent-reasons.ts'
import { currentModeId, modelChoice, type ModelChoice } from './agent-publications.ts'
import {
  CLARIFY_METHOD,
  objectParams,
  SUBAGENT_METHOD,
  type ClarifyParams,
  type ClarifyResult,
  type SubagentParams,
} from './extensions.ts'

/** What crosses the handoff from an agent's connection to its lifecycle, in arrival order. */
export type AgentInput =
  | { type: 'update'; notification: SessionNotification }
  | { type: 'permission'; request: RequestPermissionRequest; respond: (response: RequestPermissionResponse) => void }
  | { type: 'clarify'; request: ClarifyParams; respond: (result: ClarifyResult) => void }
  | { type: 'subagent'; notification: SubagentParams }
  /** Queued when session/prompt answers, so it lands after every update the agent sent before. */
  | { type: 'turnEnd'; turnId: string; response?: PromptResponse; error?: unknown }
  /** The process ended without being stopped: a crash. */
  | { type: 'exited'; code: number | null; signal: NodeJS.Signals | null }

export class AgentLaunchError extends Error {
  constructor(
    readonly code: 'agent_command_not_found' | 'agent_start_failed',
    message: string,
  ) {
    super(message)
  }
}

export const HANDOFF_CAPACITY = 256

/**
 * The updates that make up a transcript. An agent that loads a session (`session/load`) replays
 * its history as these; the server has that history already, so until the first prompt of the
 * loaded session goes out they are dropped at the connection (never stored, never published, and
 * never filling the handoff while the launch still waits for the load's answer).
 */
const TRANSCRIPT_UPDATES: ReadonlySet<string> = new Set([
  'user_message_chunk',
  'agent_message_chunk',
  'agent_thought_chunk',
  'tool_call',
  'tool_call_update',
  'usage_update',
])

/** Room an input takes in the handoff: a joined run of chunks weighs as many chunks as it carries. */
function inputWeight(input: AgentInput): number {
  return input.type === 'update' ? chunkCount(input.notification.update as { _meta?: Record<string, unknown> | null }) : 1
}

/** One ACP agent child process and its connection (one per session). */
export class AgentProcess {
  acpSessionId = ''
  supportsLoad = false
  /** What the agent published in its session/new or session/load answer (undefined: nothing). */
  published: { models?: ModelChoice; currentModeId?: string } = {}
  #stopping = false
  /** Between a session/load and the first prompt after it: transcript updates are the agent's replay. */
  #replaying = false
  /** Replayed updates dropped, a joined run of chunks counting as its chunks (tests tell a whole replay from a part). */
  replayedUpdatesDropped = 0

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly connection: ClientConnection,
    readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
    /** Everything the agent sends, in order, for the session lifecycle to consume. */
    readonly handoff: BoundedHandoff<AgentInput>,
  ) {}

  static async launch(options: {
    profile: AgentProfile
    cwd: string
    logger: Logger
    /** ACP session to load (resume) instead of creating a new one, when the agent supports it. */
    resumeAcpSessionId?: string | null
    /** The session the agent serves: in its environment (AGENT_SESSION_ID_ENV), so operators and tests can tell agents apart. */
    sessionId?: string
    /** Ends the agent's process group if this server stalls past its lease or dies. */
    watchdog?: AgentWatchdog
  }): Promise<AgentProcess> {
    const [command, ...args] = options.profile.command as [string, ...string[]]
    const env = { ...process.env, ...options.profile.env, ...(options.sessionId && { [AGENT_SESSION_ID_ENV]: options.sessionId }) }
    const child = spawn(command, args, {
      cwd: options.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group: a terminal's Ctrl-C (SIGINT to the server's group) reaches the
      // server, which ends its agents as a stop, instead of killing them before it can. Stopping
      // and the watchdog end the whole group, so tools the agent started end with it.
      detached: true,
    })
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'ENOENT'
            ? new AgentLaunchError('agent_command_not_found', `Agent command not found: ${command}`)
            : new AgentLaunchError('agent_start_failed', `Agent could not start (${error.code ?? 'error'}).`),
        ),
      )
    })
    await spawned
    const pid = child.pid!
    options.watchdog?.watch(pid)
    // The agent's stderr may echo transcript content: only its tail during the launch is kept (a
    // failed launch reports it), then it is drained unread and never logged.
    const stderr = new StderrTail(child.stderr)
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => {
        // Tools the agent left running would otherwise outlive it in its group.
        signalGroup(pid, 'SIGKILL')
        options.watchdog?.unwatch(pid)
        resolve({ code, signal })
      }),
    )
    const handoff = new BoundedHandoff<AgentInput>(HANDOFF_CAPACITY, inputWeight)
    const app = client({ name: 'task-status-server' })
      .onNotification('session/update', ({ params }) => {
        if (agent.#replaying && TRANSCRIPT_UPDATES.has(params.update.sessionUpdate)) {
          agent.replayedUpdatesDropped += chunkCount(params.update as { _meta?: Record<string, unknown> | null })
          return
        }
        handoff.push({ type: 'update', notification: params })
      })
      .onRequest(
        'session/request_permission',
        ({ params }) => new Promise<RequestPermissionResponse>((respond) => handoff.push({ type: 'permission', request: params, respond })),
      )
      .onRequest(
        CLARIFY_METHOD,
        (params) => objectParams<ClarifyParams>(params),
        ({ params }) => new Promise<ClarifyResult>((respond) => handoff.push({ type: 'clarify', request: params, respond })),
      )
      .onNotification(
        SUBAGENT_METHOD,
        (params) => objectParams<SubagentParams>(params),
        ({ params }) => handoff.push({ type: 'subagent', notification: params }),
      )
    const connection = app.connect(
      ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, throttledInput(child.stdout, handoff)),
    )
    const agent = new AgentProcess(child, connection, exited, handoff)
    void exited.then(({ code, signal }) => {
      if (!agent.stopping) handoff.push({ type: 'exited', code, signal })
    })
    // Each step of the handshake fails with the agent's own reason, also when the agent exits
    // instead of answering (its stderr then says why).
    let step = 'initialize'
    const answer = <T>(request: Promise<T>) => agent.#unlessExited(request)
    try {
      const init = await answer(connection.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} }))
      agent.supportsLoad = init.agentCapabilities?.loadSession === true
      // An agent that signs in with a key from its environment (Codex: OPENAI_API_KEY) is told
      // to, as an ACP client does, when the profile gives it that key.
      const methodId = envAuthMethod(init.authMethods, env)
      if (methodId) {
        step = 'authenticate'
        await answer(connection.agent.request('authenticate', { methodId }))
      }
      if (options.resumeAcpSessionId && agent.supportsLoad) {
        step = 'session/load'
        agent.#replaying = true
        const loaded = await answer(connection.agent.request('session/load', { sessionId: options.resumeAcpSessionId, cwd: options.cwd, mcpServers: [] }))
        agent.acpSessionId = options.resumeAcpSessionId
        agent.#publishedBy(loaded ?? {})
      } else {
        step = 'session/new'
        const created = await answer(connection.agent.request('session/new', { cwd: options.cwd, mcpServers: [] }))
        agent.acpSessionId = created.sessionId
        agent.#publishedBy(created)
      }
    } catch (error) {
      // A closed connection is usually the agent exiting: its exit (and its last words) follow.
      const exit = error instanceof RequestError ? undefined : await withinDeadline(1000, exited).catch(() => undefined)
      await agent.stop()
      // What the agent printed on its way out may still be in the pipe when its exit is seen.
      await withinDeadline(1000, finished(child.stderr)).catch(() => undefined)
      const what = exit ? `Agent exited during ${step} (${exit.signal ?? `code ${exit.code}`}).` : `Agent refused ${step}.`
      throw new AgentLaunchError('agent_start_failed', launchFailureReason(what, error, stderr.text()))
    } finally {
      stderr.stop()
    }
    return agent
  }

  #publishedBy(answer: { models?: unknown; configOptions?: unknown; modes?: unknown }): void {
    this.published = { models: modelChoice(answer), currentModeId: currentModeId(answer) }
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /** Sends a prompt; resolves with the agent's response when the turn ends. */
  prompt(text: string): Promise<PromptResponse> {
    // What the agent says from here on answers this prompt: a load's replay is over.
    this.#replaying = false
    return this.#unlessExited(this.connection.agent.request('session/prompt', { sessionId: this.acpSessionId, prompt: [{ type: 'text', text }] }))
  }

  /** The agent's answer to a request, or AgentExitedError if its process exits first. */
  #unlessExited<T>(request: Promise<T>): Promise<T> {
    return Promise.race([
      request,
      this.exited.then(({ code, signal }) => {
        throw new AgentExitedError(code, signal)
      }),
    ])
  }

  async cancel(): Promise<void> {
    await this.connection.agent.notify('session/cancel', { sessionId: this.acpSessionId }).catch(() => undefined)
  }

  get stopping(): boolean {
    return this.#stopping
  }

  /** Closes the connection and ends the process (SIGTERM, then SIGKILL after a grace period). */
  async stop(graceMs = 2000): Promise<void> {
    this.#stopping = true
    this.handoff.close()
    this.connection.close()
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const pid = this.child.pid!
      signalGroup(pid, 'SIGTERM')
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs)
      await this.exited
      clearTimeout(timer)
    }
  }
}

/**
 * The first of the agent's `env_var` auth methods whose variables are all set (non-empty) in its
 * environment; undefined when it offers none (other methods need a person: a browser, a terminal).
 */
export function envAuthMethod(methods: unknown, env: Record<string, string | undefined>): string | undefined {
  if (!Array.isArray(methods)) return undefined
  const usable = (methods as { type?: unknown; id?: unknown; vars?: unknown }[]).find(
    (m) =>
      m?.type === 'env_var' &&
      typeof m.id === 'string' &&
      Array.isArray(m.vars) &&
      m.vars.length > 0 &&
      (m.vars as { name?: unknown; optional?: unknown }[]).every((v) => v?.optional === true || (typeof v?.name === 'string' && !!env[v.name])),
  )
  return usable?.id as string | undefined
}

/** The environment variable naming the session an agent process serves. */
export const AGENT_SESSION_ID_ENV = 'TASK_STATUS_SESSION_ID'

/** Signals an agent's whole process group (it leads it: spawned detached). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    // The group is gone already.
  }
}

export class AgentExitedError extends Error {
  constructor(
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
  ) {
    super(`Agent process exited (${signal ?? `code ${code}`}).`)
  }
}
