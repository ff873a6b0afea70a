// R12 (issue 32): prompts queued behind a turn in flight survive the server. A server killed
// with kill -9 (server and agent at once) while three prompts wait behind a turn: after the
// restart on the same database each queued prompt is dispatched exactly once, in order, on a
// relaunched agent (the mock's `count`, sent last, proves the agent received exactly those),
// the turn in flight ends interrupted and is not re-sent, queuedPromptCount goes 3 → 0, and a
// retry of a queued prompt's clientMessageId replays it; the summary's interruption clears once
// the first queued prompt is dispatched after the cut (MAPPING). With several instances the same holds
// for a takeover: the survivor dispatches the prompt its dead owner left queued, once.
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { tempDir } from '../support/databases.ts'
import { gqlOk, killAll, startInstance, type Instance } from '../support/instances.ts'
import { instanceCluster } from '../support/instance-cluster.ts'
import { addMessage, agentSaid, newTask, script, session, settled, startSession, type SessionShape } from '../support/instance-sessions.ts'
import { eventually } from '../support/wait.ts'

const SUMMARY = 'query ($t: [ID!]!) { taskStatusSummaries(taskIds: $t) { queuedPromptCount primarySession { state } interruption { reason } } }'
interface Summary {
  queuedPromptCount: number
  primarySession: { state: string } | null
  interruption: { reason: string } | null
}
const summaryOf = async (on: Instance, taskId: string) =>
  (await gqlOk<{ taskStatusSummaries: Summary[] }>(on, SUMMARY, { t: [taskId] })).taskStatusSummaries[0]!
const queuedCount = (on: Instance, taskId: string, count: number) =>
  eventually(async () => (await summaryOf(on, taskId)).queuedPromptCount === count)

/** A turn that says something, then sleeps far longer than the test runs: in flight when the kill comes. */
const LONG_TURN = script({ say: 'working' }, { sleep: 600_000 })
const working = (s: SessionShape) => s.state === 'RUNNING' && agentSaid(s).includes('working')
const userTurns = (s: SessionShape) => s.turns.filter((t) => !t.lifecycleOnly)

const children: ChildProcess[] = []
afterEach(() => killAll(children))

describe('R12: kill -9 with three prompts queued behind a turn in flight, restart on the same database (sqlite)', () => {
  it('dispatches each queued prompt once, in order, after the restart; the turn in flight ends interrupted; the count goes 3 → 0', { timeout: 120_000 }, async () => {
    const env = { DATABASE_URL: `file:${path.join(tempDir('r12'), 'app.db')}`, LOG_LEVEL: 'warn' }
    const first = await startInstance('first', env, children)
    const taskId = await newTask(first)
    const sessionId = await startSession(first, taskId)
    expect((await addMessage(first, taskId, sessionId, LONG_TURN)).errors).toBeUndefined()
    await eventually(async () => working(await session(first, sessionId)))
    const queued = ['first queued', 'second queued', 'count'].map((text) => ({ text, clientMessageId: randomUUID() }))
    for (const q of queued) expect((await addMessage(first, taskId, sessionId, q.text, q.clientMessageId)).errors).toBeUndefined()
    await queuedCount(first, taskId, 3)
    const before = await session(first, sessionId)
    expect(agentSaid(before)).toEqual(['working'])
    expect(userTurns(before).map((t) => t.completedAt)).toEqual([null, null, null, null])

    first.kill()
    await first.server.exited
    const second = await startInstance('second', env, children)
    const done = await eventually(async () => {
      const s = await session(second, sessionId)
      return settled(s) && agentSaid(s).includes('prompts received: 3') && s
    })
    // Each queued prompt once, in the order accepted, on one relaunched agent that received exactly those three.
    expect(agentSaid(done)).toEqual(['working', 'echo: first queued', 'echo: second queued', 'prompts received: 3'])
    expect(userTurns(done).map((t) => t.interrupted)).toEqual([true, false, false, false])
    expect(done.turns.filter((t) => t.lifecycleOnly)).toHaveLength(1)
    expect(done.messages.find((m) => m.author === 'AGENT' && m.content === 'working')?.status).toBe('INTERRUPTED')
    expect(second.agents()).toBe(1)
    await queuedCount(second, taskId, 0)

    // A retry of a queued prompt (its client never saw the answer) replays it: no second turn, nothing sent.
    const retry = await addMessage(second, taskId, sessionId, queued[1]!.text, queued[1]!.clientMessageId)
    expect(retry.data?.addMessage).toMatchObject({ replayed: true, message: { content: 'second queued' } })
    const after = await session(second, sessionId)
    expect(userTurns(after)).toHaveLength(4)
    expect(agentSaid(after)).toEqual(agentSaid(done))
    // The queued prompts ran after the cut: the newest dispatched turn is not the cut one, so no mark.
    expect(await summaryOf(second, taskId)).toEqual({ queuedPromptCount: 0, primarySession: { state: 'WAITING_FOR_INPUT' }, interruption: null })
  })
})

describe('R12: the owner killed with kill -9 while a prompt waits behind its turn in flight (several instances)', () => {
  const LEASE_MS = 5000
  const cluster = instanceCluster(['owner', 'survivor'], { SESSION_LEASE_MS: String(LEASE_MS), LOG_LEVEL: 'warn' })

  it('the survivor takes the session over and dispatches the queued prompt once; the turn in flight ends interrupted', { timeout: 120_000 }, async () => {
    const [owner, survivor] = cluster.instances
    const taskId = await newTask(survivor)
    const sessionId = await startSession(owner, taskId)
    expect([owner.agents(), survivor.agents()]).toEqual([1, 0])
    // Through the survivor: forwarded to the owner, which runs the turn and queues the prompt.
    expect((await addMessage(survivor, taskId, sessionId, LONG_TURN)).errors).toBeUndefined()
    await eventually(async () => working(await session(survivor, sessionId)))
    const clientMessageId = randomUUID()
    expect((await addMessage(survivor, taskId, sessionId, 'count', clientMessageId)).errors).toBeUndefined()
    await queuedCount(survivor, taskId, 1)

    owner.kill()
    const done = await eventually(async () => {
      const s = await session(survivor, sessionId)
      return settled(s) && agentSaid(s).includes('prompts received: 1') && s
    }, LEASE_MS + 30_000)
    expect(agentSaid(done)).toEqual(['working', 'prompts received: 1'])
    expect(userTurns(done).map((t) => t.interrupted)).toEqual([true, false])
    expect(survivor.agents()).toBe(1)
    await queuedCount(survivor, taskId, 0)
    const retry = await addMessage(survivor, taskId, sessionId, 'count', clientMessageId)
    expect(retry.data?.addMessage.replayed).toBe(true)
    const after = await session(survivor, sessionId)
    expect(userTurns(after)).toHaveLength(2)
    expect(agentSaid(after)).toEqual(['working', 'prompts received: 1'])
    // The queued prompt went out after the takeover: it answers the cut.
    expect((await summaryOf(survivor, taskId)).interruption).toBeNull()
  })
})
