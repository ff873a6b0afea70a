import { spawn } from 'node:child_process'

/**
 * Git processes this process has started through `git()`: the observation's budget (at most three
 * per repository) is held by a test and reported by the bench, so the count lives where they spawn.
 */
export const gitProcesses = { started: 0 }

const TIMEOUT_MS = 15_000
const MAX_OUTPUT = 32 * 1024 * 1024

/** A failed git run; `stdout` is what it printed before failing (`git diff --no-index` exits 1 with a result). */
export class GitCommandError extends Error {
  constructor(
    message: string,
    readonly stdout: string,
    readonly code: number | null,
  ) {
    super(message)
  }
}

/**
 * Stdout of `git -C cwd …args` (with `input` on its stdin, `env` for its environment); rejects
 * with a GitCommandError on a non-zero exit, a timeout or too much output. Spawned directly with
 * stdin closed unless there is input: each spawn's own CPU in this process counts (the bench's
 * P12), and execFile's extra pipe and buffering are part of it. stderr is not kept: it can carry
 * file contents and paths, and no caller reads it.
 */
export function git(cwd: string, args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  gitProcesses.started++
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-C', cwd, ...args], { stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'ignore'], env: options.env })
    const chunks: Buffer[] = []
    let size = 0
    let failure: string | undefined
    const stop = (why: string) => {
      failure ??= why
      child.kill('SIGTERM')
    }
    const timer = setTimeout(() => stop(`timed out after ${TIMEOUT_MS} ms`), TIMEOUT_MS)
    child.stdout!.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_OUTPUT) stop('output too large')
      else chunks.push(chunk)
    })
    // A git that exits before reading its stdin closes the pipe: the exit reports the failure.
    child.stdin?.on('error', () => undefined)
    child.stdin?.end(options.input)
    child.on('error', (error) => stop(error.message))
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const stdout = Buffer.concat(chunks).toString('utf8')
      if (failure === undefined && code === 0) resolve(stdout)
      else reject(new GitCommandError(`git ${subcommand(args)} failed: ${failure ?? (signal ? `signal ${signal}` : `exit ${code}`)}`, stdout, code))
    })
  })
}

/** The subcommand of `args`, past the global options before it (`-c name=value` takes the next one). */
function subcommand(args: string[]): string {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-c') i++
    else if (!args[i]!.startsWith('-')) return args[i]!
  }
  return ''
}
