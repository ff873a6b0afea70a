import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Client } from 'graphql-ws'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { createTask, updateTask } from '../../src/store/tasks.ts'
import { feedHead } from '../../src/store/feed.ts'
import { decodeFeedCursor, encodeFeedCursor } from '../../src/feed/cursor.ts'
import { ClientWorkspaceEventsDocument, type ClientWorkspaceEventsSubscription } from '../../packages/client/src/generated/graphql.ts'
import { BootFeedCursorDocument, ViewerDocument } from '../generated/graphql.ts'

type FeedEvent = ClientWorkspaceEventsSubscription['workspaceEvents']

/** The SDK's own subscription (packages/client/src/operations), resumed after `after`: every event received, in order. */
function resumed(client: Client, workspaceId: string, after: string | undefined) {
  const sub = wsSubscribe(client, ClientWorkspaceEventsDocument, { workspaceId, after })
  return {
    sub,
    after: after === undefined ? undefined : decodeFeedCursor(after).sequence,
    get events(): FeedEvent[] {
      return sub.events.map((e) => {
        if (e.errors) throw new Error(JSON.stringify(e.errors))
        return e.data!.workspaceEvents
      })
    },
    get sequences(): number[] {
      return this.events.filter((e) => e.__typename !== 'WorkspaceResync').map((e) => decodeFeedCursor(e.cursor!).sequence)
    },
  }
}

/** Sequences strictly increasing: nothing twice, nothing out of order. */
function expectOrderedOnce(sequences: number[]) {
  for (let i = 1; i < sequences.length; i++) expect(sequences[i], `position ${i} of ${sequences.join(',')}`).toBeGreaterThan(sequences[i - 1]!)
}

describe('resumed subscribers share their cohort\'s live execution (sqlite, real graphql-ws clients)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string
  let statements = 0
  const cleanups: (() => unknown)[] = []
  const connect = async () => {
    const client = await wsClient(server.wsUrl, token)
    cleanups.push(() => client.dispose())
    return client
  }
  const head = async () => (await feedHead(server.store, workspaceId))!.sequence
  const cursor = async () => (await ok(server.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })).boot.feedCursor

  beforeAll(async () => {
    server = await startTestServer('sqlite', { onQuery: () => statements++ })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'resumer'))
  })
  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()))
    await eventually(() => server.gateway.tableSizes().connections === 0)
  })
  afterAll(() => server?.close())

  /**
   * Holds the feed's head reads and replay reads (the workspace feed's own statements) while armed,
   * so a test can write exactly between a resumed member's joining, its head and its replay.
   */
  function gateFeedReads() {
    const db = server.store.db
    const gates = { head: gate(), replay: gate() }
    const held = { head: 0, replay: 0 }
    const wrap = <T extends object>(delegate: T, method: string, kind: 'head' | 'replay', when: (args: unknown) => boolean) =>
      new Proxy(delegate, {
        get(target, prop) {
          const value = Reflect.get(target, prop) as unknown
          if (prop !== method || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value
          return async (args: unknown) => {
            if (gates[kind].armed && when(args)) {
              held[kind]++
              await gates[kind].released
            }
            return (value as (a: unknown) => Promise<unknown>).call(target, args)
          }
        },
      })
    server.store.db = new Proxy(db, {
      get(target, prop) {
        const value = Reflect.get(target, prop) as unknown
        if (prop === 'workspace') return wrap(target.workspace, 'findUnique', 'head', (args) => Boolean((args as { select?: { feedFloor?: boolean } }).select?.feedFloor))
        if (prop === 'taskTombstone') return wrap(target.taskTombstone, 'findMany', 'replay', () => true)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    cleanups.push(() => {
      server.store.db = db
      gates.head.release()
      gates.replay.release()
    })
    return { gates, held }
  }
  function gate() {
    let release = () => undefined as void
    const released = new Promise<void>((resolve) => (release = resolve))
    const g = { armed: false, released, release: () => ((g.armed = false), release()) }
    return g
  }

  it('each gets exactly what follows its own cursor, then every live event once, with writes during the replays; one execution per live event', async () => {
    const tasks: Awaited<ReturnType<typeof createTask>>[] = []
    for (let i = 0; i < 150; i++) tasks.push(await createTask(server.store, { workspaceId, title: `task ${i}` }))
    await server.projector.idle()
    // Cursors at different positions: each later one has fewer tasks to replay.
    const cursors: string[] = []
    for (let k = 0; k < 5; k++) {
      cursors.push(await cursor())
      for (const task of tasks.slice(k * 20, k * 20 + 20)) await updateTask(server.store, task.id, { title: `${task.title} edited ${k}` })
    }
    await server.projector.idle()
    const clients = await Promise.all([...cursors, 'peer'].map(() => connect()))
    // A live-only subscriber of the same operation: a cohort of its own (feedCohortPlan), beside
    // the resumed ones' shared one.
    const peer = resumed(clients[5]!, workspaceId, undefined)
    await eventually(() => server.gateway.cohorts.size === 1)

    // Writes to tasks no other write touches (each is its task's final state, and every position must
    // reach every subscriber): first after the members joined and before their heads are read (their
    // replays cover them, the held-back shared results must not repeat them), then after the heads and
    // before the replays are read (only the held-back shared results carry them).
    const { gates, held } = gateFeedReads()
    const write = async (batch: typeof tasks, label: string) => {
      const positions: number[] = []
      for (const task of batch) positions.push((await updateTask(server.store, task.id, { title: `${task.title} ${label}` })).feedSequence)
      await server.projector.idle()
      return positions
    }
    gates.head.armed = true
    const feeds = cursors.map((c, i) => resumed(clients[i]!, workspaceId, c))
    await eventually(() => held.head === cursors.length)
    const beforeHeads = await write(tasks.slice(100, 125), 'before the heads')
    gates.replay.armed = true
    gates.head.release()
    await eventually(() => held.replay === cursors.length)
    const beforeReplays = await write(tasks.slice(125), 'before the replays')
    gates.replay.release()
    const duringReplay = [...beforeHeads, ...beforeReplays]
    await server.projector.idle()
    const settled = await head()
    await eventually(() => [...feeds, peer].every((f) => f.sequences.at(-1) === settled), 20_000)
    expect(server.gateway.cohorts.size).toBe(2)
    expect(peer.sequences.filter((p) => duringReplay.includes(p))).toEqual(duringReplay)
    peer.sub.dispose()

    const finalTitles = new Map((await server.store.db.task.findMany({ where: { workspaceId } })).map((t) => [t.id, t]))
    for (const feed of feeds) {
      expectOrderedOnce(feed.sequences)
      expect(feed.sequences[0]).toBeGreaterThan(feed.after!)
      // Every row whose current state is after the cursor arrived in that state (nothing missed at the seam).
      const got = new Map<string, FeedEvent & { __typename: 'TaskUpserted' }>()
      for (const e of feed.events) if (e.__typename === 'TaskUpserted') got.set(e.task.id, e)
      for (const task of finalTitles.values())
        if (task.feedSequence > feed.after!) expect(got.get(task.id)?.task.title, task.title).toBe(task.title)
        else expect(got.has(task.id)).toBe(false)
      // The writes before the heads came in the replays, where a renamed task is one event whose
      // cursor need not be its row's position (test/feed/resume-fold.test.ts): the titles above prove
      // them. Those before the replays came in the held-back shared results, at their own positions.
      for (const position of beforeReplays) expect(feed.sequences).toContain(position)
    }

    // Live now: each write reaches every subscriber exactly once, in order.
    // Live now: every position of the writes below (task edits and the summary revisions they cause)
    // reaches every subscriber exactly once, in order.
    const counts = feeds.map((f) => f.sequences.length)
    for (const task of tasks.slice(0, 10)) await updateTask(server.store, task.id, { title: `${task.title} live` })
    await server.projector.idle()
    const last = await head()
    await eventually(() => feeds.every((f) => f.sequences.at(-1) === last))
    const positions = Array.from({ length: last - settled }, (_, i) => settled + 1 + i)
    for (const [i, feed] of feeds.entries()) expect(feed.sequences.slice(counts[i])).toEqual(positions)

    // One execution per live event whatever the number of resumed subscribers: the statements a
    // live task edit costs (write, projection, delivery) are the same with 5 of them as with 1.
    const costOfOneEdit = async (expected: number) => {
      await server.projector.idle()
      await Promise.all(clients.map((c) => wsExecute(c, ViewerDocument)))
      statements = 0
      await updateTask(server.store, tasks[0]!.id, { title: `measured ${expected}` })
      await server.projector.idle()
      const position = await head()
      await eventually(() => feeds.slice(0, expected).every((f) => f.sequences.at(-1) === position))
      return statements
    }
    const withFive = await costOfOneEdit(5)
    for (const feed of feeds.slice(1)) feed.sub.dispose()
    await eventually(() => server.gateway.tableSizes().subscriptions === 1)
    const withOne = await costOfOneEdit(1)
    expect(withFive).toBe(withOne)
    expect(withOne).toBeGreaterThan(0)
  }, 60_000)

  it('resumes at the shared execution\'s position read nothing: a thousand browsers fresh from boot cost no statement each', async () => {
    const first = await connect()
    const founding = resumed(first, workspaceId, await cursor())
    await wsExecute(first, ViewerDocument) // its subscribe is handled: the cohort and its shared execution exist
    await eventually(() => server.gateway.cohorts.size === 1)
    const atHead = await cursor()
    const clients = await Promise.all(Array.from({ length: 5 }, () => connect()))
    statements = 0
    const feeds = clients.map((c) => resumed(c, workspaceId, atHead))
    await eventually(() => server.gateway.tableSizes().subscriptions === 6 && server.gateway.cohorts.size === 1)
    expect(statements).toBe(0)
    // And they miss nothing after it.
    const task = await createTask(server.store, { workspaceId, title: 'after the quiet resumes' })
    await server.projector.idle()
    const last = await head()
    await eventually(() => [founding, ...feeds].every((f) => f.sequences.at(-1) === last))
    for (const feed of feeds) {
      expect(feed.sequences[0]).toBe(decodeFeedCursor(atHead).sequence + 1)
      expectOrderedOnce(feed.sequences)
      expect(JSON.stringify(feed.events)).toContain(task.id)
    }
    // A cursor behind the shared execution's position still reads its replay.
    const behind = resumed(await connect(), workspaceId, atHead)
    await eventually(() => behind.sequences.at(-1) === last)
    // The new task (its row and its first summary) is its TaskUpserted alone, which covers up to the head.
    expect(behind.events.map((e) => e.__typename)).toEqual(['TaskUpserted'])
    expect(behind.sequences).toEqual([last])
  })

  it('a resume whose cursor has expired gets WorkspaceResync, then the shared live events', async () => {
    const [first, second] = await Promise.all([connect(), connect()])
    const current = await cursor()
    const peer = resumed(first, workspaceId, current)
    const foreign = encodeFeedCursor({ epoch: 'another-database', workspaceId, sequence: 1 })
    const expired = resumed(second, workspaceId, foreign)
    await expired.sub.waitFor(1)
    expect(expired.events[0]).toMatchObject({ __typename: 'WorkspaceResync', reason: 'cursor-expired' })
    const resyncAt = decodeFeedCursor(expired.events[0]!.cursor!).sequence
    expect(resyncAt).toBe(await head())
    await wsExecute(first, ViewerDocument)
    expect(server.gateway.cohorts.size).toBe(1)

    const task = await createTask(server.store, { workspaceId, title: 'after the resync' })
    await server.projector.idle()
    const settled = await head()
    await eventually(() => [peer, expired].every((f) => f.sequences.at(-1) === settled))
    expect(expired.events.slice(1).map((e) => e.__typename !== 'WorkspaceResync' && e.cursor)).toEqual(peer.events.map((e) => e.__typename !== 'WorkspaceResync' && e.cursor))
    expect(expired.events.filter((e) => e.__typename === 'WorkspaceResync')).toHaveLength(1)
    expect(JSON.stringify(expired.events.slice(1))).toContain(task.id)
    expectOrderedOnce(expired.sequences)
  })

  it('unsubscribing or dropping the socket mid-replay frees the subscription and the cohort', async () => {
    const start = await cursor()
    for (let i = 0; i < 300; i++) await createTask(server.store, { workspaceId, title: `bulk ${i}` })
    await server.projector.idle()
    // A client that completes after the first replayed frame, with hundreds still to come.
    const client = await connect()
    const feed = resumed(client, workspaceId, start)
    await feed.sub.waitFor(1)
    feed.sub.dispose()
    await wsExecute(client, ViewerDocument)
    await eventually(() => server.gateway.tableSizes().subscriptions === 0 && server.gateway.cohorts.size === 0, 5_000)
    expect(feed.sequences.length).toBeLessThan(300)
    await client.dispose()

    // A socket terminated mid-replay.
    const raw = await rawGraphqlWs(server.wsUrl, token)
    cleanups.push(() => raw.socket.terminate())
    raw.subscribe('feed', ClientWorkspaceEventsDocument, { workspaceId, after: start })
    await raw.waitFor((f) => f.id === 'feed')
    raw.socket.terminate()
    await eventually(() => server.gateway.tableSizes().connections === 0 && server.gateway.cohorts.size === 0, 5_000)
    expect(server.gateway.tableSizes()).toMatchObject({ connections: 0, subscriptions: 0, memberships: 0, schedulerSessions: 0, cohorts: 0 })
  })
})
