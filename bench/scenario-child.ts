// One bench scenario as a child process of `npm run bench` (bench/run.ts): its own process group and
// its own TMPDIR, so that when it ends (done, failed or stopped at its limit) nothing it started
// outlives it: the group is killed, and whatever escaped the group is found in its TMPDIR.
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

export interface ScenarioRun {
  code: number | null
  ms: number
  timedOut: boolean
}

/** Runs `script` with tsx; `tmpdir` is made for it (and may be removed once it returns). */
export async function runScenario(script: string, options: { cwd: string; resultFile: string; tmpdir: string; limitMs: number }): Promise<ScenarioRun> {
  // Sticky and world-writable like /tmp: a PostgreSQL cluster of the scenario runs as the postgres user
  // (test/support/postgres-cluster.ts), which must reach its data directory in here.
  mkdirSync(options.tmpdir, { recursive: true })
  chmodSync(path.dirname(options.tmpdir), 0o711)
  chmodSync(options.tmpdir, 0o1777)
  const started = performance.now()
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: options.cwd,
    env: { ...process.env, BENCH_RESULT_FILE: options.resultFile, TMPDIR: options.tmpdir },
    stdio: 'inherit',
    detached: true,
  })
  let timedOut = false
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  const timer = setTimeout(() => ((timedOut = true), killGroup()), options.limitMs)
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  clearTimeout(timer)
  // Its servers, agents and client processes share its group: nothing outlives the scenario.
  killGroup()
  await stopPostgresLeftIn(options.tmpdir)
  return { code, ms: performance.now() - started, timedOut }
}

/**
 * pg_ctl starts PostgreSQL in a session of its own, out of the scenario's group: a scenario killed at
 * its limit (or failing before its `finally`) would leave the cluster running. Each cluster it started
 * has a postmaster.pid under its TMPDIR (`tss-pg-*`/data); SIGQUIT is PostgreSQL's immediate shutdown.
 */
async function stopPostgresLeftIn(tmpdir: string) {
  const running: number[] = []
  for (const entry of readdirSync(tmpdir)) {
    const pidFile = path.join(tmpdir, entry, 'data', 'postmaster.pid')
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : 0
    if (pid > 0 && signal(pid, 'SIGQUIT')) running.push(pid)
  }
  // Gone before the caller removes the TMPDIR, or a dying server would write into it again.
  const until = performance.now() + 10_000
  while (running.some((pid) => signal(pid, 0)) && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 100))
}

/** Whether the process was there to take the signal (0 only asks). */
function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig)
    return true
  } catch {
    return false
  }
}
