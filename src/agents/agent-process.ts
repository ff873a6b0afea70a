import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { Writable, type Readable } from 'node:stream'
import {
  client,
  ndJsonStream,
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
import { ChunkMerger, chunkCount } from './chunk-merge.ts'
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

/** Room an input takes in the handoff: a joined run of chunks weighs as many chunks as it carries. */
function inputWeight(input: AgentInput): number {
  return input.type === 'update' ? chunkCount(input.notification.update as { _meta?: Record<string, unknown> | null }) : 1
}

/**
 * stdout as a web stream that is read only while the handoff has room: the SDK pulls from it,
 * so a full handoff stops the SDK reading, the pipe fills and the agent's own writes block.
 * Each read reaches the SDK with its runs of plain text chunks joined (chunk-merge.ts).
 */
export function throttledInput(stdout: Readable, handoff: BoundedHandoff<AgentInput>): ReadableStream<Uint8Array> {
  const chunks = stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  const merger = new ChunkMerger()
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // A pull that enqueues nothing is not called again: a read that ends no line reads on.
        for (;;) {
          if (!(await handoff.waitForSpace())) return controller.close()
          const next = await chunks.next().catch(() => ({ done: true as const, value: undefined }))
          if (next.done) {
            const rest = merger.end()
            if (rest) controller.enqueue(new Uint8Array(rest))
            return controller.close()
          }
          const bytes = merger.push(next.value)
          if (bytes.length > 0) return controller.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
        }
      },
      cancel() {
        stdout.destroy()
      },
    },
    { highWaterMark: 0 },
  )
}

/** One ACP agent child process and its connection (one per session). */
export class AgentProcess {
  acpSessionId = ''
  supportsLoad = false
  #stopping = false

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
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.profile.env, ...(options.sessionId && { [AGENT_SESSION_ID_ENV]: options.sessionId }) },
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
    // The agent's stderr may echo transcript content: drained, never logged.
    child.stderr.resume()
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
      .onNotification('session/update', ({ params }) => handoff.push({ type: 'update', notification: params }))
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
    try {
      const init = await Promise.race([
        connection.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} }),
        exited.then(({ code }) => {
          throw new AgentLaunchError('agent_start_failed', `Agent exited during initialize (code ${code}).`)
        }),
      ])
      agent.supportsLoad = init.agentCapabilities?.loadSession === true
      if (options.resumeAcpSessionId && agent.supportsLoad) {
        await connection.agent.request('session/load', { sessionId: options.resumeAcpSessionId, cwd: options.cwd, mcpServers: [] })
        agent.acpSessionId = options.resumeAcpSessionId
      } else {
        agent.acpSessionId = (await connection.agent.request('session/new', { cwd: options.cwd, mcpServers: [] })).sessionId
      }
    } catch (error) {
      await agent.stop()
      if (error instanceof AgentLaunchError) throw error
      throw new AgentLaunchError('agent_start_failed', `Agent did not start an ACP session: ${(error as Error).message}`)
    }
    return agent
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /** Sends a prompt; resolves with the agent's response when the turn ends. */
  prompt(text: string): Promise<PromptResponse> {
    return Promise.race([
      this.connection.agent.request('session/prompt', { sessionId: this.acpSessionId, prompt: [{ type: 'text', text }] }),
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
