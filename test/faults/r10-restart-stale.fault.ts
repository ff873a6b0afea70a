// R10 (issue 31): a server killed with kill -9 (server and agents at once) while its agent runs a
// background subagent. After the restart nothing carries that subagent, so by the time /readyz
// turns 200 the summary shows no BACKGROUND and no subagent; and opening the session
// (sessionEvents) relaunches its agent, once however many clients open it at the same moment.
// With several instances the same holds for a takeover, and the agent relaunches on the owner,
// whichever instance the openers reach.
import type { ChildProcess } from 'node:child_process'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { tempDir } from '../support/databases.ts'
import { INSTANCE_ADMIN_TOKEN, gqlOk, killAll, startInstance, type Instance } from '../support/instances.ts'
import { instanceCluster } from '../support/instance-cluster.ts'
import { newTask, script, session, settled, startSession } from '../support/instance-sessions.ts'
import { wsClient, wsSubscribe } from '../support/client.ts'
import { SessionEventsDocument } from '../generated/graphql.ts'
import { eventually } from '../support/wait.ts'

const SUMMARY = 'query ($t: [ID!]!) { taskStatusSummaries(taskIds: $t) { foregroundActivity activeSubagentCount primarySession { state } } }'
interface Summary {
  foregroundActivity: string | null
  activeSubagentCount: number
  primarySession: { state: string } | null
}
const summaryOf = async (on: Instance, taskId: string) =>
  (await gqlOk<{ taskStatusSummaries: Summary[] }>(on, SUMMARY, { t: [taskId] })).taskStatusSummaries[0]!

/** Simultaneous openers of the session after the restart, each on a connection of its own. */
const OPENERS = 8

const children: ChildProcess[] = []
afterEach(() => killAll(children))

describe('R10: restart after kill -9 while a background subagent runs (sqlite)', () => {
  it('the restarted server is ready with no BACKGROUND and no subagent, and opening the session relaunches its agent once', { timeout: 120_000 }, async () => {
    const env = { DATABASE_URL: `file:${path.join(tempDir('r10'), 'app.db')}`, LOG_LEVEL: 'warn' }
    const first = await startInstance('first', env, children)
    const taskId = await newTask(first)
    // The turn ends at once; the subagent runs on in the background until a step that never comes.
    const sessionId = await startSession(first, taskId, script({ subagent: { title: 'indexing', id: 'forever' } }, { say: 'started it' }))
    await eventually(async () => settled(await session(first, sessionId)))
    expect(await eventually(async () => {
      const s = await summaryOf(first, taskId)
      return s.foregroundActivity === 'BACKGROUND' && s
    })).toMatchObject({ activeSubagentCount: 1, primarySession: { state: 'WAITING_FOR_INPUT' } })
    expect(first.agents()).toBe(1)

    first.kill()
    await first.server.exited
    const second = await startInstance('second', env, children)
    // The first answer after /readyz turned 200: recovery has cleared what no agent carries.
    expect(await summaryOf(second, taskId)).toEqual({ foregroundActivity: null, activeSubagentCount: 0, primarySession: { state: 'WAITING_FOR_INPUT' } })
    expect(second.agents()).toBe(0)
    const restarted = await session(second, sessionId)
    expect(restarted.turns.filter((t) => t.lifecycleOnly)).toEqual([])

    // Many clients open the session at once: one agent is relaunched, through one lifecycle-only boot turn.
    const clients = await Promise.all(Array.from({ length: OPENERS }, () => wsClient(second.wsUrl, INSTANCE_ADMIN_TOKEN)))
    try {
      const subscriptions = clients.map((c) => wsSubscribe(c, SessionEventsDocument, { sessionId }))
      for (const s of subscriptions) expect((await s.waitFor(1))[0]!.data?.sessionEvents.__typename).toBe('SessionJoined')
      const booted = await eventually(async () => {
        const s = await session(second, sessionId)
        const boots = s.turns.filter((t) => t.lifecycleOnly)
        return settled(s) && boots.length > 0 && second.agents() === 1 && boots
      })
      expect(booted).toHaveLength(1)
      // The subscribers saw the relaunch live: STARTING, then WAITING_FOR_INPUT.
      const states = () =>
        subscriptions[0]!.events.flatMap((e) => (e.data?.sessionEvents.__typename === 'SessionStateChanged' ? [e.data.sessionEvents.session.state] : []))
      await eventually(() => states().includes('WAITING_FOR_INPUT'))
      expect(states()).toEqual(['STARTING', 'WAITING_FOR_INPUT'])
      // Another opener later finds the agent running: nothing more is launched.
      const late = wsSubscribe(clients[0]!, SessionEventsDocument, { sessionId })
      await late.waitFor(1)
      const after = await session(second, sessionId)
      expect(after.turns.filter((t) => t.lifecycleOnly)).toHaveLength(1)
      expect(second.agents()).toBe(1)
      // The fresh agent carries no subagent: the summary stays clear.
      expect(await summaryOf(second, taskId)).toEqual({ foregroundActivity: null, activeSubagentCount: 0, primarySession: { state: 'WAITING_FOR_INPUT' } })
    } finally {
      await Promise.all(clients.map((c) => c.dispose()))
    }
  })
})

describe('R10: an owner killed with kill -9 while a background subagent runs (several instances)', () => {
  const LEASE_MS = 2000
  const cluster = instanceCluster(['owner', 'b', 'c'], { SESSION_LEASE_MS: String(LEASE_MS), LOG_LEVEL: 'warn' })

  it('the takeover clears the subagent, and openers on every instance relaunch one agent on the new owner', { timeout: 120_000 }, async () => {
    const [owner, b, c] = cluster.instances
    const taskId = await newTask(b)
    const sessionId = await startSession(owner, taskId, script({ subagent: { title: 'indexing', id: 'forever' } }, { say: 'started it' }))
    await eventually(async () => settled(await session(b, sessionId)))
    await eventually(async () => (await summaryOf(b, taskId)).foregroundActivity === 'BACKGROUND')

    owner.kill()
    // Whichever of b and c takes the session over clears what the dead agent carried.
    expect(await eventually(async () => {
      const s = await summaryOf(c, taskId)
      return s.foregroundActivity === null && s
    }, LEASE_MS + 20_000)).toEqual({ foregroundActivity: null, activeSubagentCount: 0, primarySession: { state: 'WAITING_FOR_INPUT' } })
    expect([b.agents(), c.agents()]).toEqual([0, 0])

    // Openers on both instances at once: one of them forwards to the owner; one agent, one boot turn.
    const clients = await Promise.all([b, c, b, c, b, c].map((on) => wsClient(on.wsUrl, INSTANCE_ADMIN_TOKEN)))
    try {
      const subscriptions = clients.map((client) => wsSubscribe(client, SessionEventsDocument, { sessionId }))
      for (const s of subscriptions) await s.waitFor(1)
      const booted = await eventually(async () => {
        const s = await session(b, sessionId)
        const boots = s.turns.filter((t) => t.lifecycleOnly)
        return settled(s) && boots.length > 0 && b.agents() + c.agents() === 1 && boots
      })
      expect(booted).toHaveLength(1)
      expect((await session(c, sessionId)).turns.filter((t) => t.lifecycleOnly)).toHaveLength(1)
      expect(b.agents() + c.agents()).toBe(1)
      expect(await summaryOf(b, taskId)).toEqual({ foregroundActivity: null, activeSubagentCount: 0, primarySession: { state: 'WAITING_FOR_INPUT' } })
    } finally {
      await Promise.all(clients.map((client) => client.dispose()))
    }
  })
})
