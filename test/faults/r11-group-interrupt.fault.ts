// R11 (issue 31, MAPPING "Outages and stalls"): Ctrl-C in the terminal that runs the server,
// that is SIGINT to its whole process group, while one session idles, one streams and one has a
// background subagent running. The agents run in process groups of their own, so the signal
// reaches the server only, which ends them as a stop: after a restart on the same database no
// session is FAILED, no session carries agent_crashed, and no agent process is left.
import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { gqlOk, killAll, startInstance, type Instance } from '../support/instances.ts'
import { addMessage, newTask, script, session, settled, startSession } from '../support/instance-sessions.ts'
import { agentsBySession } from '../support/agent-census.ts'
import { eventually } from '../support/wait.ts'

const children: ChildProcess[] = []
afterEach(() => killAll(children))

const SESSION_ERRORS = 'query ($id: ID!) { session(id: $id) { state error { code } } }'

describe('R11: Ctrl-C (SIGINT to the server’s whole process group) ends the agents as a stop', () => {
  it('no session FAILED, no agent_crashed, no agent left, whatever the sessions were doing', { timeout: 120_000 }, async () => {
    const databaseUrl = await migratedDatabase('sqlite')
    const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }
    const server: Instance = await startInstance('terminal', env, children)
    const taskIds = await Promise.all([newTask(server), newTask(server), newTask(server)])
    const idle = await startSession(server, taskIds[0]!)
    const streaming = await startSession(server, taskIds[1]!, script({ say: 'streaming:' }, { stream: { kind: 'message', count: 10_000_000 } }))
    const background = await startSession(server, taskIds[2]!)
    expect((await addMessage(server, taskIds[2]!, background, script({ subagent: { title: 'indexing', id: 'bg' } }, { say: 'started' }))).errors).toBeUndefined()
    await eventually(async () => settled(await session(server, background)), 30_000)
    await eventually(async () => (await session(server, streaming)).messages.some((m) => m.content.length > 200), 30_000)
    const sessionIds = [idle, streaming, background]
    expect(sessionIds.every((id) => agentsBySession().get(id)?.length === 1)).toBe(true)

    const pid = server.server.child.pid!
    process.kill(-pid, 'SIGINT')
    const exit = await server.server.exited
    expect(exit).toBe(0)
    // Nothing of the server's outlived it.
    await eventually(() => sessionIds.every((id) => !agentsBySession().has(id)), 10_000)

    const restarted = await startInstance('restarted', env, children)
    for (const id of sessionIds) {
      const { session: s } = await gqlOk<{ session: { state: string; error: { code: string } | null } }>(restarted, SESSION_ERRORS, { id })
      expect(s.state, id).not.toBe('FAILED')
      expect(s.error?.code ?? null, id).not.toBe('agent_crashed')
    }
  })
})
