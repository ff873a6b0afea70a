import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getOperationAST, parse, type ExecutionResult, type FieldNode } from 'graphql'
import { Cohorts } from '../../src/delivery/cohorts.ts'
import { feedCohortPlan } from '../../src/delivery/feed-cohort-plan.ts'
import { pushQueue } from '../../src/util/async-iterators.ts'
import type { Logger } from '../../src/observability/logger.ts'
import type { FeedTap } from '../../src/feed/feed-tap.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { CreateTaskDocument, CreateUserDocument, ViewerDocument, WorkspaceEventsDocument } from '../generated/graphql.ts'

describe('workspace feed cohorts (one execution per event for identical subscriptions)', () => {
  let server: TestServer
  let token: string
  let outsider: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    const owner = await userWithWorkspace(server, 'dev')
    token = owner.token
    workspaceId = owner.workspaceId
    outsider = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'out' })).createUser.token
  })
  afterAll(() => server?.close())

  it('delivers the same events to every member, authorizes each subscriber, and ends with its last member', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => wsClient(server.wsUrl, token)))
    const feeds = clients.map((c) => wsSubscribe(c, WorkspaceEventsDocument, { workspaceId }))
    const intruderClient = await wsClient(server.wsUrl, outsider)
    const intruder = wsSubscribe(intruderClient, WorkspaceEventsDocument, { workspaceId })
    expect((await intruder.waitFor(1))[0]?.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    for (const c of clients) await wsExecute(c, ViewerDocument)
    expect(server.gateway.cohorts.size).toBe(1)

    const task = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'shared' } })).createTask
    const received = await Promise.all(feeds.map((f) => f.waitFor(2)))
    for (const events of received)
      expect(events.slice(0, 2).map((e) => e.data?.workspaceEvents.__typename)).toEqual(['TaskUpserted', 'TaskStatusSummaryUpdated'])
    expect(new Set(received.map((events) => JSON.stringify(events.slice(0, 2))))).toHaveLength(1)
    expect(JSON.stringify(received[0])).toContain(task.id)

    // The first member leaving does not end the feed of the others.
    feeds[0]!.dispose()
    await wsExecute(clients[0]!, ViewerDocument)
    await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'second' } })
    await Promise.all(feeds.slice(1).map((f) => f.waitFor(4)))
    for (const f of feeds.slice(1)) f.dispose()
    await eventually(() => server.gateway.cohorts.size === 0)
    await Promise.all([...clients, intruderClient].map((c) => c.dispose()))
  })
})

describe('Cohorts when the shared source ends or fails', () => {
  const logger = () => {
    const lines: object[] = []
    const log = (fields: object) => void lines.push(fields)
    return { lines, logger: { warn: log, error: log, info: log, debug: log } as unknown as Logger }
  }
  /** A source the test feeds, ends or breaks (its pending read rejects, as a lost pub/sub connection does). */
  function source() {
    const { push, iterator } = pushQueue<ExecutionResult>({ limit: 10, onReturn: () => undefined })
    let breakPending: (error: Error) => void = () => undefined
    const broken = new Promise<never>((_, reject) => (breakPending = reject))
    broken.catch(() => undefined) // observed through the race in next()
    const next = iterator.next.bind(iterator)
    iterator.next = () => Promise.race([next(), broken])
    return { push, iterator, end: () => iterator.return?.(), break: breakPending }
  }
  const join = async (cohorts: Cohorts, subscribe: () => AsyncIterableIterator<ExecutionResult>) =>
    (await cohorts.join('k', subscribe)) as AsyncIterableIterator<ExecutionResult>

  it('completes every member after the results it was owed when the source ends', async () => {
    const { logger: log } = logger()
    const cohorts = new Cohorts(log)
    const feed = source()
    const members = [await join(cohorts, () => feed.iterator), await join(cohorts, () => source().iterator)]
    feed.push({ data: { n: 1 } })
    await feed.end()
    for (const member of members) {
      expect(await member.next()).toEqual({ value: { data: { n: 1 } }, done: false })
      expect(await member.next()).toEqual({ value: undefined, done: true })
    }
    expect(cohorts.size).toBe(0)
  })

  it('hands the results of one change to each member together, member by member, not all of one kind first', async () => {
    const { logger: log } = logger()
    const cohorts = new Cohorts(log)
    const feed = source()
    const order: [member: number, n: number][] = []
    const size = 1000
    const flushes = new Map<number, number[][]>()
    const pending = new Map<number, number[]>()
    for (let m = 0; m < size; m++)
      await cohorts.join('k', () => (m === 0 ? feed.iterator : source().iterator), {
        next: (r, deferred) => {
          order.push([m, r.data!.n as number])
          if (deferred) pending.set(m, [...(pending.get(m) ?? []), r.data!.n as number])
        },
        flush: () => {
          flushes.set(m, [...(flushes.get(m) ?? []), pending.get(m) ?? []])
          pending.delete(m)
        },
      })
    // A task edit: its TaskUpserted, then its summary, the second made while the first fans out.
    feed.push({ data: { n: 1 } })
    feed.push({ data: { n: 2 } })
    await eventually(async () => order.length === 2 * size, 5000)
    // Each member got both, in the order they happened.
    const perMember = new Map<number, number[]>()
    for (const [m, n] of order) perMember.set(m, [...(perMember.get(m) ?? []), n])
    expect([...perMember.values()].every((got) => got.join() === '1,2')).toBe(true)
    // Most members got them back to back: the second went out long before the last member had the first.
    const lastFirst = order.length - 1 - [...order].reverse().findIndex(([, n]) => n === 1)
    const firstSecond = order.findIndex(([, n]) => n === 2)
    expect(firstSecond).toBeLessThan(lastFirst)
    const together = order.filter(([m, n], i) => n === 1 && order[i + 1]?.[0] === m && order[i + 1]?.[1] === 2).length
    expect(together).toBeGreaterThan(size / 2)
    // A member handed both at once is written both at once: one flush (one write) for the two.
    const writtenTogether = [...flushes.values()].filter((writes) => writes.length === 1 && writes[0]!.join() === '1,2').length
    expect(writtenTogether).toBe(together)
    expect(pending.size).toBe(0)
    await feed.end()
  })

  it('hands a member with a sink every result in the pump\'s turn, then ends its iterator after them', async () => {
    const { logger: log } = logger()
    const cohorts = new Cohorts(log)
    const feed = source()
    const sunk: ExecutionResult[] = []
    const direct = (await cohorts.join('k', () => feed.iterator, { next: (r) => void sunk.push(r) })) as AsyncIterableIterator<ExecutionResult>
    const queued = await join(cohorts, () => source().iterator)
    const ended = direct.next()
    const pumped = () => new Promise((resolve) => setImmediate(resolve))
    feed.push({ data: { n: 1 } })
    await pumped()
    feed.push({ data: { n: 2 } })
    await pumped()
    await feed.end()
    expect(await ended).toEqual({ value: undefined, done: true })
    expect(sunk).toEqual([{ data: { n: 1 } }, { data: { n: 2 } }])
    expect(sunk[0]).toBe((await queued.next()).value) // one result object for every member: serialized once
    expect(await queued.next()).toMatchObject({ value: { data: { n: 2 } } })
    expect(await queued.next()).toEqual({ value: undefined, done: true })
    expect(cohorts.size).toBe(0)
  })

  it('ends every member with an error, logs without content, and keeps no cohort when the source fails', async () => {
    const { logger: log, lines } = logger()
    const cohorts = new Cohorts(log)
    const feed = source()
    const member = await join(cohorts, () => feed.iterator)
    feed.push({ data: { secret: 'transcript text' } })
    await expect(member.next()).resolves.toMatchObject({ value: { data: { secret: 'transcript text' } } })
    feed.break(new Error('injected: connection lost'))
    await expect(member.next()).rejects.toMatchObject({ extensions: { code: 'INTERNAL_SERVER_ERROR' } })
    expect(await member.next()).toEqual({ value: undefined, done: true })
    expect(cohorts.size).toBe(0)
    expect(lines).toHaveLength(1)
    expect(JSON.stringify(lines)).not.toContain('transcript text')
  })

  /** A feed source that reports each result's position through its tap, as the workspace feed does. */
  function tapped(tap: FeedTap) {
    const { push, iterator } = pushQueue<[ExecutionResult, number]>({ limit: 100, onReturn: () => undefined })
    const results: AsyncIterableIterator<ExecutionResult> = {
      async next() {
        const item = await iterator.next()
        if (item.done) return { value: undefined, done: true }
        tap.sequence = item.value[1]
        return { value: item.value[0], done: false }
      },
      return: async () => (await iterator.return?.(), { value: undefined, done: true }),
      [Symbol.asyncIterator]: () => results,
    }
    return { push: (sequence: number) => push([{ data: { sequence } }, sequence]), iterator: results, end: () => iterator.return?.() }
  }
  const pumped = () => new Promise((resolve) => setImmediate(resolve))
  const sequencesOf = async (member: AsyncIterableIterator<ExecutionResult>, count: number) => {
    const got: unknown[] = []
    for (let i = 0; i < count; i++) got.push((await member.next()).value?.data?.sequence)
    return got
  }

  it('a resumed member gets its replay, then the shared results after it held back meanwhile, then the rest; none twice', async () => {
    const { logger: log } = logger()
    const cohorts = new Cohorts(log)
    const liveTap: FeedTap = {}
    const shared = tapped(liveTap)
    const live = (await cohorts.join('k', () => shared.iterator, undefined, { tap: liveTap })) as AsyncIterableIterator<ExecutionResult>
    shared.push(10)
    await pumped()
    const ownTap: FeedTap = { replayOnly: true }
    const replay = tapped(ownTap)
    const resumed = (await cohorts.join(
      'k',
      async () => {
        // Published around its replay's read of the head (12): 11 and 12 are in the replay, 13 is not.
        shared.push(11)
        shared.push(12)
        await pumped()
        ownTap.replayedUpTo = 12
        replay.push(5)
        replay.push(12)
        shared.push(13)
        await pumped()
        return replay.iterator
      },
      undefined,
      { tap: ownTap, live: { subscribe: () => Promise.reject(new Error('the cohort exists')), tap: {} } },
    )) as AsyncIterableIterator<ExecutionResult>
    shared.push(14)
    await pumped()
    expect(await sequencesOf(resumed, 2)).toEqual([5, 12])
    await replay.end()
    shared.push(15)
    expect(await sequencesOf(resumed, 3)).toEqual([13, 14, 15])
    expect(await sequencesOf(live, 6)).toEqual([10, 11, 12, 13, 14, 15])
    await Promise.all([resumed.return?.(), live.return?.()])
    expect(cohorts.size).toBe(0)
  })

  it('a resumed member that founds the cohort starts the shared live source; a refusal of it is the member\'s alone', async () => {
    const { logger: log } = logger()
    const cohorts = new Cohorts(log)
    const refused = await cohorts.join('k', () => Promise.reject(new Error('not reached')), undefined, {
      tap: { replayOnly: true },
      live: { subscribe: () => ({ errors: [] }), tap: {} },
    })
    expect(refused).toEqual({ errors: [] })
    expect(cohorts.size).toBe(0)
    const liveTap: FeedTap = {}
    const shared = tapped(liveTap)
    const ownTap: FeedTap = { replayOnly: true, replayedUpTo: 3 }
    const replay = tapped(ownTap)
    const member = (await cohorts.join('k', () => replay.iterator, undefined, { tap: ownTap, live: { subscribe: () => shared.iterator, tap: liveTap } })) as AsyncIterableIterator<ExecutionResult>
    expect(cohorts.size).toBe(1)
    replay.push(3)
    shared.push(3)
    shared.push(4)
    await pumped()
    expect(await sequencesOf(member, 1)).toEqual([3])
    await replay.end()
    expect(await sequencesOf(member, 1)).toEqual([4])
    await member.return?.()
    expect(cohorts.size).toBe(0)
  })

  describe('feedCohortPlan', () => {
    const plan = (query: string, variables?: Record<string, unknown>) => {
      const document = parse(query)
      const field = getOperationAST(document)!.selectionSet.selections[0] as FieldNode
      return feedCohortPlan(field, document, query, undefined, variables)
    }
    const byVariable = 'subscription($w: ID!, $after: String) { workspaceEvents(workspaceId: $w, after: $after) { __typename } }'

    it('resumes differing only by their cursor share a key and a live execution without the cursor', () => {
      const a = plan(byVariable, { w: 'ws', after: 'c1' })
      const b = plan(byVariable, { w: 'ws', after: 'c2' })
      expect(a.key).toBe(b.key)
      expect(a.live?.variableValues).toEqual({ w: 'ws', after: null })
      const inline = plan('subscription { workspaceEvents(workspaceId: "ws", after: "c1") { __typename } }')
      expect(inline.key).toBe(plan('subscription { workspaceEvents(workspaceId: "ws", after: "c9") { __typename } }').key)
      expect(JSON.stringify(inline.live?.document)).not.toContain('c1')
    })

    // A live-only execution tracks positions from its first event, a resumed cohort's from the head
    // it read: until a first event they answer a lost pub/sub link differently (WorkspaceResync vs
    // a repair), so the two never share one.
    it('live-only subscribers never share the resumed cohort of the same operation', () => {
      const resumed = plan(byVariable, { w: 'ws', after: 'c1' }).key
      for (const live of [plan(byVariable, { w: 'ws' }), plan(byVariable, { w: 'ws', after: null })]) {
        expect(live.live).toBeUndefined()
        expect(live.key).not.toBe(resumed)
      }
      const inline = plan('subscription { workspaceEvents(workspaceId: "ws", after: "c1") { __typename } }').key
      expect(plan('subscription { workspaceEvents(workspaceId: "ws") { __typename } }').key).not.toBe(inline)
    })
  })
})
