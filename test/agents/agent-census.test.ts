// The R8 census counts only the agents of the sessions its test started: on a shared machine
// another run's agents (other session ids) are never counted, and two of one session always are.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { AGENT_SESSION_ID_ENV } from '../../src/agents/agent-process.ts'
import { agentsBySession, startAgentCensus } from '../support/agent-census.ts'
import { eventually } from '../support/wait.ts'

describe('agent census', () => {
  const children: ChildProcess[] = []
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL')
  })
  /** A stand-in agent process serving `sessionId` (its environment is what the census reads). */
  const agent = (sessionId: string) => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { env: { ...process.env, [AGENT_SESSION_ID_ENV]: sessionId }, stdio: 'ignore' })
    children.push(child)
    return child
  }

  it('counts the agents of its own sessions only, and sees two of one session', async () => {
    const ours = randomUUID()
    const another = randomUUID()
    const otherRun = randomUUID()
    agent(ours)
    agent(another)
    agent(otherRun)
    agent(otherRun) // another run's double is not this test's business
    await eventually(() => agentsBySession().get(otherRun)?.length === 2 && agentsBySession().has(ours) && agentsBySession().has(another))
    const census = startAgentCensus([ours, another], 10_000)
    let report = census.stop()
    expect([...report.maxPerSession.keys()].sort()).toEqual([ours, another].sort())
    expect(report.doubles).toEqual([])

    agent(ours)
    await eventually(() => agentsBySession().get(ours)?.length === 2)
    report = startAgentCensus([ours], 10_000).stop()
    expect(report.maxPerSession.get(ours)).toBe(2)
    expect(report.doubles.map((d) => d.sessionId)).toEqual([ours, ours])
  })
})
