// R7 (docs/performance.md): the instance that runs a session is killed with kill -9 (server and
// its agent at once) while the agent streams a reply. The other instance takes the session over
// once the dead owner's lease has run out, and nothing is lost: what was stored stays, the cut
// turn is closed as interrupted, the session waits for input, and the next prompt is answered.
import { beforeAll, describe, expect, it } from 'vitest'
import { instanceCluster } from '../support/instance-cluster.ts'
import { metricValue, type Instance } from '../support/instances.ts'
import { addMessage, agentSaid, newTask, script, session, settled, startSession, type SessionShape } from '../support/instance-sessions.ts'
import { eventually } from '../support/wait.ts'

const LEASE_MS = 2000
/** The lease is renewed every third of it; a takeover pass runs as often (src/instances/instance-lease.ts). */
const RENEWAL_MS = Math.floor(LEASE_MS / 3)
/** Recovering the session (closing the turn, re-deriving the summary) and this test's polling, on a shared machine. */
const RECOVERY_SLACK_MS = 2000

describe('R7: the owner instance killed with kill -9 mid-turn', () => {
  const cluster = instanceCluster(['owner', 'survivor'], { SESSION_LEASE_MS: String(LEASE_MS), LOG_LEVEL: 'warn' })
  let owner: Instance
  let survivor: Instance

  beforeAll(() => {
    ;[owner, survivor] = cluster.instances
  })

  it('the survivor takes the session over within the lease, keeps every stored message, closes the cut turn and answers the next prompt', { timeout: 90_000 }, async () => {
    const taskId = await newTask(survivor)
    const sessionId = await startSession(owner, taskId)
    expect([owner.agents(), survivor.agents()]).toEqual([1, 0])
    // A finished exchange first, then a turn that streams far longer than this test runs.
    expect((await addMessage(survivor, taskId, sessionId, 'before the crash')).errors).toBeUndefined()
    await eventually(async () => agentSaid(await session(survivor, sessionId)).includes('echo: before the crash'))
    expect((await addMessage(survivor, taskId, sessionId, script({ say: 'streaming:' }, { stream: { kind: 'message', count: 10_000_000 } }))).errors).toBeUndefined()
    // Streaming: the streamed reply ("0;1;2;…", a message after "streaming:") is stored and growing.
    const streamed = (s: SessionShape) => s.messages.find((m) => m.author === 'AGENT' && m.content.startsWith('0;1;') && m.content.length > 200)
    await eventually(async () => streamed(await session(survivor, sessionId)))

    const before = await session(survivor, sessionId)
    expect(before.state).toBe('RUNNING')
    const takeoversBefore = await metricValue(survivor, 'instance_session_takeovers_total', { reason: 'lease' })
    const killedAt = Date.now()
    owner.kill()
    const after = await eventually(async () => {
      const s = await session(survivor, sessionId)
      return settled(s) && s
    }, LEASE_MS + 20_000)
    const takeoverMs = Date.now() - killedAt
    console.info(`R7: session taken over ${takeoverMs} ms after kill -9 (SESSION_LEASE_MS ${LEASE_MS}, bound ${LEASE_MS + RENEWAL_MS + RECOVERY_SLACK_MS} ms)`)
    expect(takeoverMs).toBeLessThanOrEqual(LEASE_MS + RENEWAL_MS + RECOVERY_SLACK_MS)
    // By the survivor's lease pass (not by a prompt that found the session ownerless).
    expect(await metricValue(survivor, 'instance_session_takeovers_total', { reason: 'lease' })).toBe(takeoversBefore + 1)

    // Nothing stored before the kill is lost: same messages, in order, each at least as long as it was
    // (the owner may have stored more of the stream between that read and its death).
    const kept = after.messages.slice(0, before.messages.length)
    expect(kept.map((m) => m.id)).toEqual(before.messages.map((m) => m.id))
    for (const [i, m] of before.messages.entries()) expect(kept[i]!.content.startsWith(m.content), m.id).toBe(true)
    expect(after.messages.filter((m) => m.author === 'USER')).toHaveLength(2)
    // The cut turn is closed as interrupted (and only it); its reply ends INTERRUPTED; the session is not left RUNNING.
    expect(after.state).toBe('WAITING_FOR_INPUT')
    expect(after.turns.filter((t) => t.interrupted)).toHaveLength(1)
    expect(after.turns.every((t) => t.completedAt !== null)).toBe(true)
    expect(streamed(after)?.status).toBe('INTERRUPTED')

    // The next prompt through the survivor relaunches the agent there and runs to completion.
    expect((await addMessage(survivor, taskId, sessionId, 'after the crash')).errors).toBeUndefined()
    const final = await eventually(async () => {
      const s = await session(survivor, sessionId)
      return settled(s) && agentSaid(s).includes('echo: after the crash') && s
    })
    expect(final.turns.filter((t) => !t.lifecycleOnly).map((t) => t.interrupted)).toEqual([false, true, false])
    expect(survivor.agents()).toBe(1)
  })
})
