// Several real server processes on one PostgreSQL and one Redis, with real mock agent processes:
// each session's agent runs on exactly one instance, commands sent anywhere are carried out there,
// and when that instance dies (kill -9) or shuts down another one takes the session over.
import { randomUUID } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { instanceCluster } from '../support/instance-cluster.ts'
import { gql, gqlOk, metricValue, type Instance } from '../support/instances.ts'
import { addMessage, agentSaid, newTask, script, session, settled, startSession } from '../support/instance-sessions.ts'
import { wsClient, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { SessionEventsDocument } from '../generated/graphql.ts'
import { INSTANCE_ADMIN_TOKEN } from '../support/instances.ts'

describe('several instances on one PostgreSQL and one Redis', () => {
  const cluster = instanceCluster(['A', 'B'], { SESSION_LEASE_MS: '5000' })
  let a: Instance
  let b: Instance

  beforeAll(() => {
    ;[a, b] = cluster.instances
  })

  it('a prompt through B for a session A runs is dispatched by A: one agent process in all, the reply readable through A', async () => {
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId)
    const forwardedBefore = await metricValue(b, 'instance_forwarded_commands_total', { command: 'addMessage', outcome: 'ok' })

    expect((await addMessage(b, taskId, sessionId, 'via B')).errors).toBeUndefined()
    const done = await eventually(async () => {
      const s = await session(a, sessionId)
      return settled(s) && agentSaid(s).length === 1 && s
    })
    expect(agentSaid(done)).toEqual(['echo: via B'])
    expect([a.agents(), b.agents()]).toEqual([1, 0])
    expect(await metricValue(b, 'instance_forwarded_commands_total', { command: 'addMessage', outcome: 'ok' })).toBe(forwardedBefore + 1)
  })

  it('respondToPermission, answerClarification and stopSession through B act on the agent A runs', async () => {
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId)
    await addMessage(b, taskId, sessionId, script({ permission: { title: 'Run tests?' } }, { clarify: { question: 'Which branch?' } }, { say: 'finished' }))
    const pendingOf = async (kind: string) =>
      eventually(async () => (await session(b, sessionId)).messages.find((m) => m.kind === kind && m.status === 'PENDING')?.pendingId ?? undefined)

    const permission = await pendingOf('PERMISSION_REQUEST')
    const approved = await gql<{ respondToPermission: { status: string } }>(
      b,
      'mutation ($s: ID!, $p: ID!) { respondToPermission(sessionId: $s, pendingId: $p, optionId: "allow") { status } }',
      { s: sessionId, p: permission },
    )
    expect(approved).toEqual({ data: { respondToPermission: { status: 'APPROVED' } } })
    const clarification = await pendingOf('CLARIFICATION')
    const answered = await gql<{ answerClarification: { status: string } }>(
      b,
      'mutation ($s: ID!, $p: ID!) { answerClarification(sessionId: $s, pendingId: $p, answer: "main") { status } }',
      { s: sessionId, p: clarification },
    )
    expect(answered).toEqual({ data: { answerClarification: { status: 'ANSWERED' } } })
    await eventually(async () => agentSaid(await session(a, sessionId)).includes('finished'))
    // Answering twice through the other instance is the owner's CONFLICT, as it would be locally.
    const again = await gql(b, 'mutation ($s: ID!, $p: ID!) { respondToPermission(sessionId: $s, pendingId: $p, optionId: "allow") { status } }', {
      s: sessionId,
      p: permission,
    })
    expect(again.errors?.map((e) => e.extensions?.code)).toEqual(['CONFLICT'])

    const agentsOfA = a.agents()
    const stopped = await gqlOk<{ stopSession: { state: string } }>(b, 'mutation ($id: ID!) { stopSession(id: $id) { state } }', { id: sessionId })
    expect(stopped.stopSession.state).toBe('CANCELLED')
    // The agent ended on A, where it ran; nothing was ever started on B.
    await eventually(() => a.agents() === agentsOfA - 1)
    expect(b.agents()).toBe(0)
  })

  it('refreshSessionGit and focusSession through B are carried out by A', async () => {
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId)
    const before = await metricValue(a, 'instance_served_commands_total', { command: 'refreshGit' })
    expect((await gql(b, 'mutation ($s: ID!) { refreshSessionGit(sessionId: $s) { id } }', { s: sessionId })).errors).toBeUndefined()
    expect(await metricValue(a, 'instance_served_commands_total', { command: 'refreshGit' })).toBe(before + 1)

    const client = await wsClient(b.url.replace('http', 'ws'), INSTANCE_ADMIN_TOKEN)
    const focusBefore = await metricValue(a, 'instance_served_commands_total', { command: 'focus' })
    const focused = await new Promise<unknown>((resolve, reject) =>
      client.subscribe({ query: 'mutation ($s: ID!) { focusSession(sessionId: $s) { focused } }', variables: { s: sessionId } }, { next: resolve, error: reject, complete: () => undefined }),
    )
    expect(focused).toEqual({ data: { focusSession: { focused: true } } })
    expect(await metricValue(a, 'instance_served_commands_total', { command: 'focus' })).toBe(focusBefore + 1)
    // The connection's end on B ends the focus A holds for it.
    const unfocusBefore = await metricValue(a, 'instance_served_commands_total', { command: 'unfocus' })
    await client.dispose()
    await eventually(async () => (await metricValue(a, 'instance_served_commands_total', { command: 'unfocus' })) === unfocusBefore + 1)
  })
})

describe('three instances, and the owner killed with kill -9', () => {
  // Room for a loaded machine: an instance that cannot renew within 80 % of it ends its agents (the fence).
  const LEASE_MS = 5000
  const cluster = instanceCluster(['A'], { SESSION_LEASE_MS: String(LEASE_MS) })
  let a: Instance
  let b: Instance
  let c: Instance

  beforeAll(() => {
    ;[a] = cluster.instances
  })

  it('instances started while a turn is in flight on A reset nothing: the turn runs on, on its one agent', { timeout: 60_000 }, async () => {
    const taskId = await newTask(a)
    // The turn stays open until its permission request is answered, however long the starts take.
    const sessionId = await startSession(a, taskId, script({ say: 'begin' }, { permission: { title: 'Go on?' } }, { say: 'end' }))
    const pendingId = await eventually(async () => (await session(a, sessionId)).messages.find((m) => m.status === 'PENDING')?.pendingId ?? undefined)

    ;[b, c] = await Promise.all([cluster.start('B'), cluster.start('C')])
    const during = await session(b, sessionId)
    expect(during.state).toBe('RUNNING')
    expect(during.turns.filter((t) => !t.lifecycleOnly && t.completedAt === null)).toHaveLength(1)
    expect([a.agents(), b.agents(), c.agents()]).toEqual([1, 0, 0])
    expect(during.messages.find((m) => m.pendingId === pendingId)?.status).toBe('PENDING')

    await gqlOk(c, 'mutation ($s: ID!, $p: ID!) { respondToPermission(sessionId: $s, pendingId: $p, optionId: "allow") { status } }', { s: sessionId, p: pendingId })
    const after = await eventually(async () => {
      const s = await session(c, sessionId)
      return settled(s) && s
    })
    expect(agentSaid(after)).toEqual(['begin', 'end'])
    expect(after.turns.some((t) => t.interrupted)).toBe(false)
  })

  it('50 concurrent retries of one clientMessageId spread over three instances store one message and dispatch it once', async () => {
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId)
    const clientMessageId = randomUUID()
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => addMessage([a, b, c][i % 3]!, taskId, sessionId, 'once', clientMessageId)))
    expect(results.flatMap((r) => r.errors ?? [])).toEqual([])
    expect(results.filter((r) => r.data?.addMessage.replayed === false)).toHaveLength(1)
    expect(new Set(results.map((r) => r.data?.addMessage.message.id)).size).toBe(1)
    await eventually(async () => settled(await session(a, sessionId)))
    // The agent received it once: `count` answers 2 (that prompt and this one).
    await addMessage(c, taskId, sessionId, 'count')
    const final = await eventually(async () => {
      const s = await session(b, sessionId)
      return settled(s) && agentSaid(s).length === 2 && s
    })
    expect(final.messages.filter((m) => m.author === 'USER').map((m) => m.content)).toEqual(['once', 'count'])
    expect(agentSaid(final)).toEqual(['echo: once', 'prompts received: 2'])
    expect([a.agents(), b.agents(), c.agents()]).toEqual([2, 0, 0]) // this session's and the previous test's
  })

  it(
    'kill -9 of the owner mid-turn: another instance takes the session over within the lease plus 5 s, a subscriber sees every message once, and the next prompt through any instance is answered',
    { timeout: 90_000 },
    async () => {
      const taskId = await newTask(b)
      const sessionId = await startSession(a, taskId)
      const subscriber = await wsClient(c.url.replace('http', 'ws'), INSTANCE_ADMIN_TOKEN)
      const events = wsSubscribe(subscriber, SessionEventsDocument, { sessionId })
      await events.waitFor(1)
      await eventually(async () => (await cluster.redis.subscribers(`tss:session:${sessionId}`)) >= 1)

      expect((await addMessage(b, taskId, sessionId, 'before the crash')).errors).toBeUndefined()
      await eventually(async () => {
        const s = await session(b, sessionId)
        return settled(s) && agentSaid(s).includes('echo: before the crash')
      })
      await addMessage(b, taskId, sessionId, script({ say: 'cut' }, { sleep: 30_000 }, { say: 'never' }))
      await eventually(async () => agentSaid(await session(b, sessionId)).includes('cut'))

      const killedAt = Date.now()
      a.kill()
      const recovered = await eventually(async () => {
        const s = await session(b, sessionId)
        return settled(s) && s
      }, LEASE_MS + 15_000)
      const takeoverMs = Date.now() - killedAt
      console.info(`takeover after kill -9: ${takeoverMs} ms (SESSION_LEASE_MS ${LEASE_MS})`)
      expect(takeoverMs).toBeLessThan(LEASE_MS + 5000)
      expect(recovered.turns.filter((t) => t.interrupted)).toHaveLength(1)
      expect(recovered.messages.find((m) => m.content === 'cut')?.status).toBe('INTERRUPTED')

      // The next prompt, through the instance that did not take it over or the one that did, relaunches the agent once.
      expect((await addMessage(c, taskId, sessionId, 'after the crash')).errors).toBeUndefined()
      const final = await eventually(async () => {
        const s = await session(c, sessionId)
        return settled(s) && agentSaid(s).includes('echo: after the crash') && s
      })
      expect(b.agents() + c.agents()).toBe(1)

      // The subscriber on C saw each message of the transcript, written by A then by the new owner, exactly once.
      await eventually(() => {
        const added = events.events.filter((e) => e.data?.sessionEvents.__typename === 'MessageAdded')
        return added.length >= final.messages.length
      })
      const added = events.events.flatMap((e) => (e.data?.sessionEvents.__typename === 'MessageAdded' ? [e.data.sessionEvents.message.id] : []))
      expect(added).toEqual(final.messages.map((m) => m.id))
      events.dispose()
      await subscriber.dispose()
    },
  )

  it('a prompt sent just after its owner dies waits for the takeover and is answered', { timeout: 60_000 }, async () => {
    const taskId = await newTask(b)
    const owner = b
    const survivor = c
    const sessionId = await startSession(owner, taskId)
    const killedAt = Date.now()
    owner.kill()
    // Sent while the dead owner's lease still holds: the survivor waits, then takes the session over.
    const reply = await addMessage(survivor, taskId, sessionId, 'while it died')
    console.info(`prompt through the survivor answered ${Date.now() - killedAt} ms after kill -9 (SESSION_LEASE_MS ${LEASE_MS})`)
    expect(reply.errors).toBeUndefined()
    const s = await eventually(async () => {
      const current = await session(survivor, sessionId)
      return settled(current) && agentSaid(current).includes('echo: while it died') && current
    })
    expect(s.messages.filter((m) => m.author === 'USER').map((m) => m.content)).toEqual(['while it died'])
    expect(survivor.agents()).toBeGreaterThanOrEqual(1)
  })
})

describe('an owner that does not answer, and one that shuts down', () => {
  // Long enough that no takeover happens while A is stopped.
  const LEASE_MS = 60_000
  const cluster = instanceCluster(['A', 'B'], { SESSION_LEASE_MS: String(LEASE_MS), FORWARD_TIMEOUT_MS: '1500' })
  let a: Instance
  let b: Instance

  beforeAll(() => {
    ;[a, b] = cluster.instances
  })

  it('with the owner stopped (SIGSTOP) and its lease still valid, addMessage through B is UNAVAILABLE and nothing is stored, not even once the owner resumes', async () => {
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId)
    const clientMessageId = randomUUID()
    a.signal('SIGSTOP')
    let result
    try {
      result = await addMessage(b, taskId, sessionId, 'lost', clientMessageId)
    } finally {
      a.signal('SIGCONT')
    }
    expect(result.errors?.map((e) => e.extensions?.code)).toEqual(['UNAVAILABLE'])
    expect(result.data).toBeNull()
    // A reads its inbox in order: once it has answered a later command, it has seen (and dropped) the stale one.
    expect((await addMessage(b, taskId, sessionId, 'later')).errors).toBeUndefined()
    await eventually(async () => settled(await session(b, sessionId)) && agentSaid(await session(b, sessionId)).length === 1)
    const s = await session(b, sessionId)
    expect(s.messages.filter((m) => m.author === 'USER').map((m) => m.content)).toEqual(['later'])
    expect(await metricValue(b, 'instance_forwarded_commands_total', { command: 'addMessage', outcome: 'unavailable' })).toBe(1)
  })

  it('after a graceful shutdown (SIGTERM) of the owner, the next prompt through B is answered at once, long before the lease would lapse', { timeout: 60_000 }, async () => {
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId, script({ say: 'long' }, { sleep: 30_000 }))
    await eventually(async () => agentSaid(await session(b, sessionId)).includes('long'))
    a.signal('SIGTERM')
    expect(await a.server.exited).toBe(0)
    const stoppedAt = Date.now()
    expect((await addMessage(b, taskId, sessionId, 'to B')).errors).toBeUndefined()
    const s = await eventually(async () => {
      const current = await session(b, sessionId)
      return settled(current) && agentSaid(current).includes('echo: to B') && current
    })
    expect(Date.now() - stoppedAt).toBeLessThan(LEASE_MS / 2)
    expect(s.turns.filter((t) => t.interrupted)).toHaveLength(1)
    expect(b.agents()).toBe(1)
  })
})
