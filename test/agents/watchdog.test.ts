// The agent watchdog (src/agents/watchdog): a real watchdog process and real process groups
// standing in for agents (`sleep`, each leading its own group, with a child of its own). Waits
// poll the process table with deadlines; no timing is asserted beyond "before" and "after".
import { spawn, type ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { AgentWatchdog } from '../../src/agents/watchdog/agent-watchdog.ts'
import { eventually } from '../support/wait.ts'

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A stand-in agent: a shell leading its own process group, with a tool of its own (a sleep). */
function fakeAgent(): ChildProcess {
  const child = spawn('sh', ['-c', 'sleep 600 & wait'], { detached: true, stdio: 'ignore' })
  child.unref()
  return child
}

describe('the agent watchdog', () => {
  const started: ChildProcess[] = []
  const watchdogs: AgentWatchdog[] = []
  afterEach(() => {
    for (const w of watchdogs.splice(0)) w.close()
    for (const c of started.splice(0))
      try {
        process.kill(-c.pid!, 'SIGKILL')
      } catch {
        // gone
      }
  })
  const make = () => {
    const watchdog = new AgentWatchdog({ logger: pino({ level: 'silent' }) })
    watchdogs.push(watchdog)
    const agents = [fakeAgent(), fakeAgent()]
    started.push(...agents)
    return { watchdog, agents }
  }
  const groupAlive = (c: ChildProcess) => alive(-c.pid!)

  it('kills every watched agent group once the last deadline passes without a newer one', { timeout: 30_000 }, async () => {
    const { watchdog, agents } = make()
    watchdog.deadline(60_000)
    for (const a of agents) watchdog.watch(a.pid!)
    // A newer, shorter deadline replaces the long one (what a renewal that found less time left sends).
    watchdog.deadline(300)
    await eventually(() => agents.every((a) => !groupAlive(a)), 10_000)
  })

  it('leaves agents alone while deadlines keep arriving, and an unwatched group alone when the deadline passes', { timeout: 30_000 }, async () => {
    const { watchdog, agents } = make()
    const [kept, ended] = agents as [ChildProcess, ChildProcess]
    watchdog.watch(kept.pid!)
    watchdog.watch(ended.pid!)
    // Renewals: each deadline is pushed out before the last one passes.
    for (let i = 0; i < 5; i++) {
      watchdog.deadline(1_000)
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(agents.every(groupAlive)).toBe(true)
    watchdog.unwatch(kept.pid!)
    watchdog.deadline(100)
    await eventually(() => !groupAlive(ended), 10_000)
    expect(groupAlive(kept)).toBe(true)
  })

  it('with no deadline (SQLite) nothing is killed; when the server side closes, every watched group is killed', { timeout: 30_000 }, async () => {
    const { watchdog, agents } = make()
    watchdog.deadline(null)
    for (const a of agents) watchdog.watch(a.pid!)
    await new Promise((r) => setTimeout(r, 500))
    expect(agents.every(groupAlive)).toBe(true)
    watchdog.close()
    await eventually(() => agents.every((a) => !groupAlive(a)), 10_000)
  })
})
