import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../../observability/logger.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
const fromSources = import.meta.url.endsWith('.ts')

/** How the watchdog runs: the same Node, from the sources with tsx or compiled beside this module. */
export const WATCHDOG_COMMAND: readonly string[] = fromSources
  ? [process.execPath, '--import', import.meta.resolve('tsx'), path.join(here, 'watchdog-process.ts')]
  : [process.execPath, path.join(here, 'watchdog-process.js')]

/**
 * The server's end of the agent watchdog (watchdog-process.ts): started with the first agent,
 * told of every agent process group and of each deadline the lease grants, so agents end even
 * when this process cannot run code. It lives in its own process group: a terminal's Ctrl-C
 * reaches the server, which ends the agents as a stop; the watchdog only cleans up after it.
 */
export class AgentWatchdog {
  #child: ChildProcess | undefined
  readonly #watched = new Set<number>()
  /** The last deadline sent, as an absolute time on performance.now(), so a restarted watchdog gets what is left of it. */
  #deadlineAt: number | null = null
  #closed = false

  constructor(
    private readonly deps: { logger: Logger; command?: readonly string[] },
  ) {}

  /** An agent's process group (its pid: it leads its own group) to kill if the server stalls or dies. */
  watch(pgid: number): void {
    this.#watched.add(pgid)
    this.#send(`watch ${pgid}`)
  }

  unwatch(pgid: number): void {
    if (!this.#watched.delete(pgid)) return
    this.#send(`unwatch ${pgid}`)
  }

  /** Agents must be gone by `ms` from now unless a later deadline arrives; null: no deadline. */
  deadline(ms: number | null): void {
    this.#deadlineAt = ms === null ? null : performance.now() + ms
    if (this.#child || this.#watched.size > 0) this.#send(this.#deadlineLine())
  }

  /** Shutdown: the pipe closes, the watchdog kills whatever is left (nothing after a clean stop) and exits. */
  close(): void {
    this.#closed = true
    this.#child?.stdin?.end()
    this.#child = undefined
  }

  #deadlineLine(): string {
    return this.#deadlineAt === null ? 'deadline none' : `deadline ${Math.max(0, Math.floor(this.#deadlineAt - performance.now()))}`
  }

  #send(line: string): void {
    if (this.#closed) return
    const child = this.#child ?? this.#start()
    child.stdin?.write(`${line}\n`)
  }

  #start(): ChildProcess {
    const [command, ...args] = (this.deps.command ?? WATCHDOG_COMMAND) as [string, ...string[]]
    const child = spawn(command, args, { detached: true, stdio: ['pipe', 'ignore', 'inherit'] })
    this.#child = child
    // Neither keeps the server's event loop alive: the server ends when its work ends.
    child.unref()
    ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
    child.stdin?.on('error', () => undefined)
    child.on('error', (error) => this.deps.logger.error({ err: error, action: 'watchdog.start' }, 'agent watchdog could not start'))
    child.once('exit', (code, signal) => {
      if (this.#child !== child || this.#closed) return
      this.#child = undefined
      // Without it a stall could leave two agents for a session: another one starts with what it
      // knew (#start sends the deadline first), or with the next agent when none runs now.
      this.deps.logger.error({ action: 'watchdog.exit', code, signal }, 'agent watchdog ended; starting another')
      for (const pgid of this.#watched) this.#send(`watch ${pgid}`)
    })
    child.stdin?.write(`${this.#deadlineLine()}\n`)
    return child
  }
}
