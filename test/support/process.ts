import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'

export const projectRoot = new URL('../..', import.meta.url).pathname

export interface StartupTimes {
  listeningMs: number
  readyMs: number
}

export interface ServerProcess {
  child: ChildProcess
  exited: Promise<number | null>
  /**
   * Resolves once /readyz answers 200 on `port`, with when the process first answered at all
   * (its port bound: /readyz 503) and when it became ready, in ms after the spawn; rejects if
   * the process exits first.
   */
  ready(port: number): Promise<StartupTimes>
  output(): { stdout: string; stderr: string }
}

/**
 * A server as a real child process: `args` after the Node binary (`--import tsx src/main.ts` is
 * `npm start`, `dist/main.js` the build). Only PATH and HOME are inherited, so the environment
 * given is the whole configuration.
 */
export function spawnServer(
  args: string[],
  env: Record<string, string>,
  children: ChildProcess[],
  /**
   * `detached`: the server leads its own process group, so `process.kill(-pid, …)` reaches its agents too.
   * `command` and `cwd`: another program than Node (`npm` to run a package script, a wrapper) and where.
   */
  options: { detached?: boolean; command?: string; cwd?: string } = {},
): ServerProcess {
  const spawnedAt = performance.now()
  const child = spawn(options.command ?? process.execPath, args, {
    cwd: options.cwd ?? projectRoot,
    detached: options.detached ?? false,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const ready = async (port: number): Promise<StartupTimes> => {
    let gone = false
    void exited.then(() => (gone = true))
    let listeningAt: number | undefined
    // Polling a real process's readiness endpoint: there is no event to wait on across processes.
    for (;;) {
      const status = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0)
      if (status !== 0) listeningAt ??= performance.now()
      if (status === 200) return { listeningMs: listeningAt! - spawnedAt, readyMs: performance.now() - spawnedAt }
      if (gone) throw new Error(`exited ${await exited}: ${stderr}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return { child, exited, ready, output: () => ({ stdout, stderr }) }
}

/** Running (a zombie left for whoever reaps orphans here has ended). */
export function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z'
  } catch {
    return false
  }
}

/** Every process below `pid`, children first. */
export function descendantsOf(pid: number): number[] {
  let children: number[]
  try {
    children = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim().split('\n').map(Number)
  } catch {
    return [] // pgrep exits 1 when there is none
  }
  return children.flatMap((child) => [child, ...descendantsOf(child)])
}
