// The agent watchdog: a small process beside the server (one per server process, in its own
// process group) that ends the server's agents when the server cannot. A stalled server
// (SIGSTOP, a frozen VM, a swap storm) runs no code, so it cannot stop its agents before its
// lease expires and another instance starts new ones for the same sessions; this process runs
// on, and kills every agent process group it was told of once the server's last deadline
// passes. When the server dies (its end of the pipe closes) the agents die with it.
//
// Protocol on stdin, one command per line (no content ever crosses it):
//   deadline <ms>   kill every watched group unless another deadline arrives within <ms>
//   deadline none   no deadline (the server's lease cannot expire: SQLite)
//   watch <pgid>    an agent's process group (the agent runs as its group's leader)
//   unwatch <pgid>  the agent ended; its pid may be reused
// Only Node built-ins here: this file runs on its own, from the sources (tsx) or compiled.
import { createInterface } from 'node:readline'

const watched = new Set<number>()
let timer: NodeJS.Timeout | undefined

function killAll(reason: string): void {
  if (watched.size > 0) process.stderr.write(`agent-watchdog: ${reason}: killing ${watched.size} agent process group(s)\n`)
  for (const pgid of watched)
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // The group is gone already.
    }
  watched.clear()
}

function setDeadline(argument: string): void {
  clearTimeout(timer)
  timer = undefined
  if (argument === 'none') return
  const ms = Number(argument)
  if (!Number.isFinite(ms)) return
  // Node's timers run on a monotonic clock: a wall-clock jump neither fires nor delays this.
  timer = setTimeout(() => killAll('the server missed its deadline'), Math.max(0, ms))
}

const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  const [command, argument = ''] = line.trim().split(' ', 2)
  const pgid = Number(argument)
  if (command === 'deadline') setDeadline(argument)
  else if (command === 'watch' && Number.isInteger(pgid) && pgid > 1) watched.add(pgid)
  else if (command === 'unwatch') watched.delete(pgid)
})
// The server is gone (exited, killed, or closed the pipe on shutdown): nothing may outlive it.
lines.on('close', () => {
  killAll('the server is gone')
  process.exit(0)
})
// Signals aimed at the server's terminal do not reach this process group; a direct one still
// must not leave agents without their watchdog.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const)
  process.on(signal, () => {
    killAll(`${signal} received`)
    process.exit(0)
  })
