import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { Registry } from 'prom-client'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { openWorkspaceFeed, type FeedItem } from '../../src/feed/resumable-feed.ts'
import { createFeedMetrics } from '../../src/feed/feed-metrics.ts'
import { feedEventOf } from '../../src/feed/task-feed.ts'
import { feedHead } from '../../src/store/feed.ts'
import { createTask, updateTask } from '../../src/store/tasks.ts'
import type { WorkspaceEventPayload } from '../../src/pubsub/pubsub.ts'

/**
 * The seam and the holes, made deterministic: the projector is stopped and the task feed's
 * publishes are held by the test, so it decides when (and in which order) live payloads arrive.
 */
describe('resumable feed: the seam between replay and live, and holes in live', () => {
  let world: ProjectorWorld
  let held: WorkspaceEventPayload[]
  let stopHolding: () => void

  beforeEach(async () => {
    world = await projectorWorld('sqlite')
    world.projector.stop()
    held = []
    stopHolding = world.store.events.on((event) => {
      const payload = feedEventOf(event)
      if (payload) held.push(payload)
    })
  })
  afterEach(async () => {
    stopHolding()
    await world.close()
  })

  const open = (after?: number) =>
    openWorkspaceFeed(
      { store: world.store, pubsub: world.pubsub, logger: pino({ level: 'silent' }), metrics: createFeedMetrics(new Registry()), epoch: 'e' },
      world.workspaceId,
      after === undefined ? {} : { after: { epoch: 'e', workspaceId: world.workspaceId, sequence: after } },
    )
  const publish = (payload: WorkspaceEventPayload) => world.pubsub.publish('workspace', world.workspaceId, payload)
  const take = async (feed: AsyncIterableIterator<FeedItem>, count: number) => {
    const items: FeedItem[] = []
    while (items.length < count) items.push((await feed.next()).value as FeedItem)
    return items
  }
  const describeItem = (item: FeedItem) => `${item.type}:${'taskId' in item ? item.taskId : ''}:${item.sequence}`

  it('live payloads the replay already covered are dropped at the seam; the next change follows the replay', async () => {
    const tasks = await Promise.all(['a', 'b', 'c'].map((title) => createTask(world.store, { workspaceId: world.workspaceId, title })))
    const cursor = (await feedHead(world.store, world.workspaceId))!.sequence
    for (const task of tasks) await updateTask(world.store, task.id, { title: `${task.title}!` })
    held.length = 0
    for (const task of tasks) await updateTask(world.store, task.id, { title: `${task.title}!!` })
    const coveredByReplay = held.splice(0)

    const feed = await open(cursor)
    // Committed before the head was read, arriving live only now (a slow publisher): already replayed.
    for (const payload of coveredByReplay) await publish(payload)
    const next = await updateTask(world.store, tasks[0]!.id, { title: 'next' })
    for (const payload of held.splice(0)) await publish(payload)

    const items = await take(feed, 4)
    expect(items.slice(0, 3).map((i) => (i.type === 'TaskUpserted' ? i.task?.title : i.type)).sort()).toEqual(['a!!', 'b!!', 'c!!'])
    expect(items[3]).toMatchObject({ type: 'TaskUpserted', taskId: next.id, sequence: next.feedSequence })
    await feed.return!()
  })

  it('a payload that arrives ahead of the one before it gets the missing position from the database first; the late one is dropped', async () => {
    const task = await createTask(world.store, { workspaceId: world.workspaceId, title: 't' })
    const feed = await open((await feedHead(world.store, world.workspaceId))!.sequence)
    held.length = 0
    await updateTask(world.store, task.id, { title: 'first' })
    const other = await createTask(world.store, { workspaceId: world.workspaceId, title: 'second' })
    const [first, second] = held.splice(0)
    await publish(second!)
    await publish(first!) // reordered across publishers: already repaired
    const items = await take(feed, 2)
    const third = await updateTask(world.store, task.id, { title: 'third' })
    for (const payload of held.splice(0)) await publish(payload)
    items.push(...(await take(feed, 1)))
    expect(items.map(describeItem)).toEqual([
      `TaskUpserted:${task.id}:${first!.type === 'TaskUpserted' ? first!.sequence : -1}`,
      `TaskUpserted:${other.id}:${other.feedSequence}`,
      `TaskUpserted:${task.id}:${third.feedSequence}`,
    ])
    // The repaired one was read from the database (its row), the others came live.
    expect(items[0]).toMatchObject({ task: { title: 'first' } })
    await feed.return!()
  })

  it('return() ends a feed waiting for live events at once', async () => {
    const feed = await open()
    const pending = feed.next()
    await feed.return!()
    await expect(pending).resolves.toEqual({ value: undefined, done: true })
  })
})
