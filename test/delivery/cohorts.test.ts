import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ExecutionResult } from 'graphql'
import { Cohorts } from '../../src/delivery/cohorts.ts'
import { subscriptionQueue } from '../../src/pubsub/subscription-queue.ts'
import type { Logger } from '../../src/observability/logger.ts'
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
    const { push, iterator } = subscriptionQueue<ExecutionResult>({ limit: 10, onReturn: () => undefined })
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
})
