import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Client } from 'graphql-ws'
import { startTestServer, type TestServer } from '../support/server.ts'
import { startTwinServers, type TwinServers } from '../support/twin-servers.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { scrapeMetric } from '../support/metrics.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createSession } from '../../src/store/sessions.ts'
import { purgeTombstones } from '../../src/store/feed.ts'
import { decodeFeedCursor, encodeFeedCursor } from '../../src/feed/cursor.ts'
import type { WorkspaceEventPayload } from '../../src/pubsub/pubsub.ts'
import {
  BootFeedCursorDocument,
  DeleteTaskDocument,
  ResumeTaskStatusSummaryUpdatedDocument,
  ResumeWorkspaceEventsDocument,
  TaskStatusSummariesDocument,
  UpdateTaskDocument,
  type ResumeWorkspaceEventsSubscription,
} from '../generated/graphql.ts'

type FeedEvent = ResumeWorkspaceEventsSubscription['workspaceEvents']

/** A switcher's view of the feed: every event it received, in order. */
function feedOf(client: Client, workspaceId: string, after?: string) {
  const sub = wsSubscribe(client, ResumeWorkspaceEventsDocument, { workspaceId, after })
  return {
    sub,
    get events(): FeedEvent[] {
      return sub.events.map((e) => {
        if (e.errors) throw new Error(JSON.stringify(e.errors))
        return e.data!.workspaceEvents
      })
    },
  }
}

const taskIdOf = (e: FeedEvent) =>
  e.__typename === 'TaskUpserted' ? e.task.id : e.__typename === 'WorkspaceResync' ? undefined : e.taskId
const sequenceOf = (e: FeedEvent) => decodeFeedCursor(e.cursor!).sequence

/** No event sent twice, positions strictly increasing: what lets a client resume from the last one it kept. */
function expectOrderedOnce(events: FeedEvent[]) {
  const sequences = events.filter((e) => e.__typename !== 'WorkspaceResync').map(sequenceOf)
  expect(sequences).toEqual([...sequences].sort((a, b) => a - b))
  expect(new Set(sequences).size).toBe(sequences.length)
}

interface Cluster {
  /** Where the switcher boots and first subscribes. */
  first: TestServer
  /** Where it resumes (the other instance when there are two). */
  second: TestServer
  servers: TestServer[]
}

async function idle(cluster: Cluster) {
  await Promise.all(cluster.servers.map((s) => s.projector.idle()))
}

async function summaryRevisions(server: TestServer, token: string, taskIds: string[]) {
  const { taskStatusSummaries } = await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds })
  return new Map(taskStatusSummaries.map((s, i) => [taskIds[i]!, s?.revision ?? null]))
}

function resumeScenario(name: string, setUp: () => Promise<Cluster>, tearDown: () => Promise<void>) {
  describe(name, () => {
    let cluster: Cluster
    let token: string
    let workspaceId: string
    let taskIds: string[]

    beforeAll(async () => {
      cluster = await setUp()
      ;({ token, workspaceId } = await userWithWorkspace(cluster.first, 'switcher'))
      taskIds = []
      for (let i = 0; i < 500; i++) taskIds.push((await createTask(cluster.first.store, { workspaceId, title: `task ${i}` })).id)
      await idle(cluster)
    }, 120_000)
    afterAll(tearDown)

    it('a switcher away while 50 of 500 tasks change and 3 are deleted resumes with exactly those 53 tasks, each once at its latest state, then live with none missing or doubled', async () => {
      const { first, second } = cluster
      const gql = (server: TestServer) => <R, V>(doc: Parameters<typeof ok<R, V>>[2], vars: V) =>
        ok<R, V>(server.graphqlUrl, token, doc, ...([vars] as never))

      // Boot, follow the feed live, keep the last cursor received.
      const { boot } = await gql(first)(BootFeedCursorDocument, { workspaceId })
      const before = await summaryRevisions(first, token, taskIds)
      let client = await wsClient(first.wsUrl, token)
      const live = feedOf(client, workspaceId, boot.feedCursor)
      await gql(first)(UpdateTaskDocument, { id: taskIds[499]!, input: { title: 'seen live' } })
      await eventually(() => live.events.some((e) => e.__typename === 'TaskUpserted' && e.task.title === 'seen live'))
      await idle(cluster)
      await eventually(() => live.events.some((e) => e.__typename === 'TaskStatusSummaryUpdated' && e.taskId === taskIds[499]))
      const lastCursor = live.events.at(-1)!.cursor!
      await client.dispose()
      const revisionsAtDisconnect = await summaryRevisions(first, token, taskIds)

      // Away: 30 tasks edited (twice each, through both instances), 20 changed only by agent
      // activity (a session, so a new summary revision and no task edit), 3 deleted.
      const edited = taskIds.slice(0, 30)
      const activityOnly = taskIds.slice(30, 50)
      const deleted = taskIds.slice(50, 53)
      for (const [i, id] of edited.entries()) {
        await gql(i % 2 ? first : second)(UpdateTaskDocument, { id, input: { title: `draft ${i}` } })
        await gql(i % 2 ? second : first)(UpdateTaskDocument, { id, input: { title: `final ${i}` } })
      }
      for (const id of activityOnly) await createSession(second.store, { taskId: id, agentProfile: 'mock', state: 'IDLE' })
      for (const id of deleted) await gql(second)(DeleteTaskDocument, { id })
      await idle(cluster)
      const after = await summaryRevisions(first, token, taskIds)
      const summaryChanged = taskIds.filter((id) => !deleted.includes(id) && after.get(id) !== revisionsAtDisconnect.get(id))
      expect(summaryChanged).toEqual(expect.arrayContaining(activityOnly))
      expect(summaryChanged.every((id) => edited.includes(id) || activityOnly.includes(id))).toBe(true)

      // Resume on the other instance with the last cursor kept.
      client = await wsClient(second.wsUrl, token)
      const resumed = feedOf(client, workspaceId, lastCursor)
      const replayCount = edited.length + summaryChanged.length + deleted.length
      await eventually(() => resumed.events.length >= replayCount)
      // A live change after the replay: its arrival proves nothing more of the replay was coming.
      await gql(first)(UpdateTaskDocument, { id: taskIds[400]!, input: { title: 'after resume' } })
      await eventually(() => resumed.events.some((e) => e.__typename === 'TaskUpserted' && e.task.title === 'after resume'))
      const replay = resumed.events.slice(0, replayCount)
      expect(resumed.events[replayCount]).toMatchObject({ __typename: 'TaskUpserted', task: { id: taskIds[400] } })

      const upserts = replay.filter((e) => e.__typename === 'TaskUpserted')
      const summaries = replay.filter((e) => e.__typename === 'TaskStatusSummaryUpdated')
      const deletions = replay.filter((e) => e.__typename === 'TaskDeleted')
      expect(upserts.map((e) => e.task.id).sort()).toEqual([...edited].sort())
      expect(upserts.map((e) => e.task.title).sort()).toEqual(edited.map((_, i) => `final ${i}`).sort())
      expect(summaries.map((e) => e.taskId).sort()).toEqual([...summaryChanged].sort())
      for (const e of summaries) expect(e.summary.revision).toBe(after.get(e.taskId))
      expect(deletions.map((e) => e.taskId).sort()).toEqual([...deleted].sort())
      expect(new Set(replay.map(taskIdOf)).size).toBe(53)
      // Agent activity is never a TaskUpserted.
      expect(upserts.some((e) => activityOnly.includes(e.task.id))).toBe(false)
      expect(before.size).toBe(500)

      // Live from here: five more edits and their summaries, nothing doubled, nothing missing.
      for (const id of taskIds.slice(60, 65)) await gql(first)(UpdateTaskDocument, { id, input: { title: 'live' } })
      await idle(cluster)
      const expectedRevisions = await summaryRevisions(first, token, taskIds.slice(60, 65))
      await eventually(() =>
        [...expectedRevisions].every(([id, revision]) =>
          resumed.events.some((e) => e.__typename === 'TaskStatusSummaryUpdated' && e.taskId === id && e.summary.revision === revision),
        ),
      )
      await eventually(async () => {
        const head = (await gql(second)(BootFeedCursorDocument, { workspaceId })).boot.feedCursor
        return resumed.events.at(-1)!.cursor === head
      })
      expectOrderedOnce(resumed.events)
      expect(resumed.events.filter((e) => e.__typename === 'WorkspaceResync')).toEqual([])
      await client.dispose()
    }, 120_000)

    it('a resume while tasks keep changing ends at the same state as the database, with no event twice at the seam', async () => {
      const { first, second } = cluster
      const { boot } = await ok(first.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })
      const churn = taskIds.slice(100, 140)
      const edits = (round: number) =>
        Promise.all(
          churn.map((id, i) => ok((i % 2 ? first : second).graphqlUrl, token, UpdateTaskDocument, { id, input: { title: `r${round}` } })),
        )
      await edits(1)
      const client = await wsClient(second.wsUrl, token)
      // Subscribing while the second round is in flight puts changes on both sides of the seam.
      const [resumed] = await Promise.all([Promise.resolve(feedOf(client, workspaceId, boot.feedCursor)), edits(2), edits(3)])
      await idle(cluster)
      const head = (await ok(second.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })).boot.feedCursor
      await eventually(() => resumed.events.length > 0 && resumed.events.at(-1)!.cursor === head)
      expectOrderedOnce(resumed.events)
      const latestTitle = new Map<string, string>()
      const latestRevision = new Map<string, number>()
      for (const e of resumed.events) {
        if (e.__typename === 'TaskUpserted') latestTitle.set(e.task.id, e.task.title)
        if (e.__typename === 'TaskStatusSummaryUpdated') latestRevision.set(e.taskId, e.summary.revision)
      }
      expect([...latestTitle.keys()].sort()).toEqual([...churn].sort())
      // Rounds 2 and 3 race each other: whichever committed last is the state the feed must end at.
      const stored = await first.store.db.task.findMany({ where: { id: { in: churn } }, select: { id: true, title: true } })
      expect(Object.fromEntries(latestTitle)).toEqual(Object.fromEntries(stored.map((t) => [t.id, t.title])))
      expect(Object.fromEntries(latestRevision)).toEqual(Object.fromEntries(await summaryRevisions(first, token, churn)))
      await client.dispose()
    }, 120_000)
  })
}

describe('resumable workspace feed', () => {
  let sqlite: TestServer
  resumeScenario(
    'on the embedded default (SQLite, one instance)',
    async () => {
      sqlite = await startTestServer('sqlite')
      return { first: sqlite, second: sqlite, servers: [sqlite] }
    },
    async () => void (await sqlite?.close()),
  )

  let twins: TwinServers | undefined
  resumeScenario(
    'across two instances (PostgreSQL + Redis), resumed on the other one',
    async () => {
      const { a, b } = (twins = await startTwinServers())
      return { first: a, second: b, servers: [a, b] }
    },
    async () => void (await twins?.close()),
  )
})

describe('cursors that cannot be resumed (SQLite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string
  let client: Client
  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'resume'))
    client = await wsClient(server.wsUrl, token)
  })
  afterAll(async () => {
    await client?.dispose()
    await server?.close()
  })

  const head = async () => decodeFeedCursor((await ok(server.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })).boot.feedCursor)

  /** The first event of a resume, then proof that the feed goes on live after it. */
  async function resumeWith(after: string) {
    const feed = feedOf(client, workspaceId, after)
    await eventually(() => feed.events.length >= 1)
    const task = await createTask(server.store, { workspaceId, title: 'after' })
    await eventually(() => feed.events.some((e) => e.__typename === 'TaskUpserted' && e.task.id === task.id))
    feed.sub.dispose()
    return feed.events
  }

  it('a cursor of another database gets WorkspaceResync cursor-expired first, then the live feed', async () => {
    await createTask(server.store, { workspaceId, title: 'x' })
    const foreign = encodeFeedCursor({ ...(await head()), epoch: 'another-database' })
    const events = await resumeWith(foreign)
    expect(events[0]).toMatchObject({ __typename: 'WorkspaceResync', reason: 'cursor-expired', workspaceId })
    expect(events.filter((e) => e.__typename === 'WorkspaceResync')).toHaveLength(1)
  })

  it('a cursor of another workspace, or from ahead of the database, is cursor-expired', async () => {
    const other = (await userWithWorkspace(server, 'other')).workspaceId
    const position = await head()
    for (const cursor of [encodeFeedCursor({ ...position, workspaceId: other }), encodeFeedCursor({ ...position, sequence: position.sequence + 1000 })])
      expect((await resumeWith(cursor))[0]).toMatchObject({ __typename: 'WorkspaceResync', reason: 'cursor-expired' })
  })

  it('a cursor older than a purged tombstone is cursor-expired; one after it still resumes', async () => {
    const old = await head()
    const doomed = await createTask(server.store, { workspaceId, title: 'doomed' })
    await ok(server.graphqlUrl, token, DeleteTaskDocument, { id: doomed.id })
    const afterDeletion = await head()
    // The retention has passed for that deletion.
    await purgeTombstones(server.store, new Date(Date.now() + 60_000))
    expect((await resumeWith(encodeFeedCursor(old)))[0]).toMatchObject({ __typename: 'WorkspaceResync', reason: 'cursor-expired' })
    const fresh = await resumeWith(encodeFeedCursor(afterDeletion))
    expect(fresh.filter((e) => e.__typename === 'WorkspaceResync')).toEqual([])
    expect(await scrapeMetric(server.url, 'feed_cursor_expired_total')).toBeGreaterThanOrEqual(1)
  })

  it('two tabs resuming with the same cursor each get the whole replay (a resume shares no cohort)', async () => {
    const cursor = (await ok(server.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })).boot.feedCursor
    const changed = await Promise.all([1, 2].map((i) => createTask(server.store, { workspaceId, title: `tab ${i}` })))
    const firstTab = feedOf(client, workspaceId, cursor)
    await eventually(() => changed.every((t) => firstTab.events.some((e) => taskIdOf(e) === t.id)))
    const other = await wsClient(server.wsUrl, token)
    const secondTab = feedOf(other, workspaceId, cursor)
    await eventually(() => changed.every((t) => secondTab.events.some((e) => taskIdOf(e) === t.id)))
    firstTab.sub.dispose()
    await other.dispose()
  })

  it('the summary-only feed with a cursor of another database replays every current summary instead', async () => {
    const tasks = await Promise.all([1, 2, 3].map((i) => createTask(server.store, { workspaceId, title: `s${i}` })))
    await server.projector.idle()
    const foreign = encodeFeedCursor({ ...(await head()), epoch: 'another-database' })
    const sub = wsSubscribe(client, ResumeTaskStatusSummaryUpdatedDocument, { workspaceId, after: foreign })
    const total = await server.store.db.taskStatusSummary.count({ where: { workspaceId } })
    await sub.waitFor(total)
    const ids = sub.events.map((e) => e.data!.taskStatusSummaryUpdated.taskId)
    expect(ids).toEqual(expect.arrayContaining(tasks.map((t) => t.id)))
    expect(new Set(ids).size).toBe(total)
    sub.dispose()
  })
})

describe('holes in the live feed are filled from the database', () => {
  let twins: TwinServers | undefined
  let a: TestServer
  let b: TestServer
  let token: string
  let workspaceId: string
  beforeAll(async () => {
    ;({ a, b } = twins = await startTwinServers())
    ;({ token, workspaceId } = await userWithWorkspace(a, 'gaps'))
  }, 60_000)
  afterAll(() => twins?.close())

  /** Drops every workspace-feed publish of `taskId` on `server` (a lost Redis message) until undone. */
  function losePublishesOf(server: TestServer, taskId: string) {
    const publish = server.pubsub.publish.bind(server.pubsub)
    server.pubsub.publish = (async (topic: string, key: string, payload: WorkspaceEventPayload) => {
      if (topic === 'workspace' && 'taskId' in payload && payload.taskId === taskId) return
      return publish(topic as 'workspace', key, payload)
    }) as typeof server.pubsub.publish
    return () => void (server.pubsub.publish = publish)
  }

  it('a lost Redis message is repaired from the sequence: the subscriber on the other instance gets that task, and no WorkspaceResync', async () => {
    const [lost, next] = await Promise.all(['lost', 'next'].map((title) => createTask(a.store, { workspaceId, title })))
    await Promise.all([a.projector.idle(), b.projector.idle()])
    const { boot } = await ok(b.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })
    const client = await wsClient(b.wsUrl, token)
    const feed = feedOf(client, workspaceId, boot.feedCursor)
    const repairs = (await scrapeMetric(b.url, 'feed_gap_repairs_total', { cause: 'gap' })) ?? 0

    const restore = losePublishesOf(a, lost!.id)
    await ok(a.graphqlUrl, token, UpdateTaskDocument, { id: lost!.id, input: { title: 'lost edit' } })
    await a.projector.idle()
    restore()
    await ok(a.graphqlUrl, token, UpdateTaskDocument, { id: next!.id, input: { title: 'next edit' } })

    await eventually(() => feed.events.some((e) => e.__typename === 'TaskUpserted' && e.task.id === next!.id))
    const lostEvents = feed.events.filter((e) => taskIdOf(e) === lost!.id)
    expect(lostEvents.map((e) => e.__typename).sort()).toEqual(['TaskStatusSummaryUpdated', 'TaskUpserted'])
    expect(lostEvents.find((e) => e.__typename === 'TaskUpserted')).toMatchObject({ task: { title: 'lost edit' } })
    expect(feed.events.filter((e) => e.__typename === 'WorkspaceResync')).toEqual([])
    expectOrderedOnce(feed.events)
    expect(await scrapeMetric(b.url, 'feed_gap_repairs_total', { cause: 'gap' })).toBeGreaterThan(repairs)
    await client.dispose()
  }, 60_000)

  it('a dropped pub/sub link (resync from the transport) is repaired up to the database head instead of passed on', async () => {
    const task = await createTask(a.store, { workspaceId, title: 'during outage' })
    await Promise.all([a.projector.idle(), b.projector.idle()])
    const { boot } = await ok(b.graphqlUrl, token, BootFeedCursorDocument, { workspaceId })
    const client = await wsClient(b.wsUrl, token)
    const feed = feedOf(client, workspaceId, boot.feedCursor)
    const restore = losePublishesOf(a, task.id)
    await ok(a.graphqlUrl, token, UpdateTaskDocument, { id: task.id, input: { title: 'missed' } })
    await a.projector.idle()
    restore()
    // What the Redis transport tells local subscribers after its link came back.
    await b.pubsub.publish('workspace', workspaceId, { type: 'WorkspaceResync', workspaceId, reason: 'pub/sub connection was interrupted' })
    await eventually(() => feed.events.some((e) => e.__typename === 'TaskUpserted' && e.task.title === 'missed'))
    expect(feed.events.filter((e) => e.__typename === 'WorkspaceResync')).toEqual([])
    await client.dispose()
  }, 60_000)
})
