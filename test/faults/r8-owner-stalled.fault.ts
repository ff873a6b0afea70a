// R8 (issue 31, MAPPING "Outages and stalls"): the instance that runs three streaming sessions is
// stopped with SIGSTOP for twice its lease, then continued. A stopped process runs no code, so
// its agents must be ended by its watchdog before the lease expires; the survivor takes the
// sessions over only after that, and runs their next prompts on agents of its own; the resumed
// owner writes nothing more (its writes are fenced) and runs no agent. A census of agent
// processes every 100 ms (test/support/agent-census.ts) must never see two for one session.
import { beforeAll, describe, expect, it } from 'vitest'
import { instanceCluster } from '../support/instance-cluster.ts'
import { gqlOk, type Instance } from '../support/instances.ts'
import { addMessage, newTask, script, session, settled, startSession, type SessionShape } from '../support/instance-sessions.ts'
import { startAgentCensus } from '../support/agent-census.ts'
import { openStore, summaryDrift } from '../support/summary-rebuild.ts'
import { eventually } from '../support/wait.ts'

const LEASE_MS = 3000
const SESSIONS = 3
const STREAM = script({ say: 'streaming:' }, { stream: { kind: 'message', count: 10_000_000 } })

describe('R8: the owner instance stalled (SIGSTOP) for twice its lease, then continued', () => {
  const cluster = instanceCluster(['owner', 'survivor'], { SESSION_LEASE_MS: String(LEASE_MS), LOG_LEVEL: 'warn' })
  let owner: Instance
  let survivor: Instance
  beforeAll(() => {
    ;[owner, survivor] = cluster.instances
  })

  it('never two agents for one session; the stale owner writes nothing after it continues', { timeout: 240_000 }, async () => {
    const taskIds = await Promise.all(Array.from({ length: SESSIONS }, () => newTask(survivor)))
    const sessionIds = await Promise.all(taskIds.map((t) => startSession(owner, t, STREAM)))
    const streaming = (s: SessionShape) => s.state === 'RUNNING' && s.messages.some((m) => m.status === 'IN_PROGRESS' && m.content.length > 200)
    await eventually(async () => (await Promise.all(sessionIds.map((id) => session(survivor, id)))).every(streaming), 30_000)
    expect(owner.agents()).toBe(SESSIONS)

    const census = startAgentCensus(sessionIds, 100)
    const stoppedAt = Date.now()
    owner.signal('SIGSTOP')
    try {
      // The survivor takes each session over once the owner's lease has expired: its turn is closed as interrupted.
      await eventually(async () => (await Promise.all(sessionIds.map((id) => session(survivor, id)))).every(settled), LEASE_MS + 15_000)
      const takenOverMs = Date.now() - stoppedAt
      // And runs the next prompts on agents of its own, while the owner is still stopped.
      for (const [i, id] of sessionIds.entries()) expect((await addMessage(survivor, taskIds[i]!, id, STREAM)).errors).toBeUndefined()
      await eventually(async () => (await Promise.all(sessionIds.map((id) => session(survivor, id)))).every(streaming), 30_000)
      expect(survivor.agents()).toBe(SESSIONS)
      const left = 2 * LEASE_MS - (Date.now() - stoppedAt)
      if (left > 0) await new Promise((r) => setTimeout(r, left))
      console.info(`R8: taken over ${takenOverMs} ms after SIGSTOP (SESSION_LEASE_MS ${LEASE_MS}); owner continued after ${Date.now() - stoppedAt} ms`)
    } finally {
      owner.signal('SIGCONT')
    }
    const atContinue = await Promise.all(sessionIds.map((id) => session(survivor, id)))

    // The resumed owner answers again, runs no agent, and has taken its lease anew (a heartbeat has run).
    // A keep-alive connection the stopped process could not serve may be reset as it continues: that probe counts as not yet answering.
    await eventually(() => gqlOk<{ __typename: string }>(owner, '{ __typename }').then((d) => d.__typename === 'Query', () => false), 20_000)
    await new Promise((r) => setTimeout(r, LEASE_MS))
    expect(owner.agents()).toBe(0)

    // Nothing of the stale owner landed: every message the takeover finalized is as it was, no
    // message appeared (the survivor's streams were already under way), one turn open per session.
    const afterContinue = await Promise.all(sessionIds.map((id) => session(survivor, id)))
    for (const [i, before] of atContinue.entries()) {
      const after = afterContinue[i]!
      for (const m of before.messages.filter((m) => m.status === 'INTERRUPTED'))
        expect(after.messages.find((n) => n.id === m.id), m.id).toMatchObject({ status: 'INTERRUPTED', content: m.content })
      expect(after.messages.map((m) => m.id)).toEqual(before.messages.map((m) => m.id))
      expect(after.turns.filter((t) => t.completedAt === null)).toHaveLength(1)
    }

    console.info(`R8: checked the stale owner's writes at ${Date.now() - stoppedAt} ms`)
    // The survivor's turns end on request: nothing stays IN_PROGRESS after its turn.
    await Promise.all(sessionIds.map((id) => gqlOk(survivor, 'mutation ($id: ID!) { stopSession(id: $id) { state } }', { id })))
    const final = await Promise.all(sessionIds.map((id) => session(survivor, id)))
    for (const s of final) {
      expect(s.turns.every((t) => t.completedAt !== null)).toBe(true)
      expect(s.messages.filter((m) => m.status === 'IN_PROGRESS' || m.status === 'PENDING')).toEqual([])
    }

    console.info(`R8: sessions stopped at ${Date.now() - stoppedAt} ms`)
    const report = census.stop()
    console.info(
      `R8 census: ${report.samples} samples every 100 ms; most agents seen at once per session: ${[...report.maxPerSession.values()].join(', ')}; samples with two for one session: ${report.doubles.length}`,
    )
    expect(report.doubles).toEqual([])
    expect([...report.maxPerSession.values()].every((n) => n <= 1)).toBe(true)
    expect(report.maxPerSession.size).toBe(SESSIONS)

    const store = await openStore(cluster.databaseUrl)
    try {
      await eventually(async () => (await summaryDrift(store, taskIds)).length === 0, 20_000).catch(() => undefined)
      expect(await summaryDrift(store, taskIds)).toEqual([])
    } finally {
      await store.db.$disconnect()
    }
  })
})
