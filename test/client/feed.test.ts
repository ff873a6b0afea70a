import { describe, expect, it } from 'vitest'
import { bootAnswer, feedEvent, harness, openBooted, settle, summary, taskRow } from './harness.ts'

describe('openWorkspace', () => {
  it('boots every page of tasks, then follows workspaceEvents after boot.feedCursor', async () => {
    const h = harness({ pageSize: 2 })
    const opened = h.client.openWorkspace('ws-1')
    expect(h.client.summaries.getState()).toMatchObject({ workspaceId: 'ws-1', status: 'booting' })
    await settle()
    const boot = h.socket.pending('ClientBoot')
    expect(boot.variables).toEqual({ workspaceId: 'ws-1', first: 2 })
    boot.reply(bootAnswer('boot-cursor', [taskRow('a', 'A', summary('a', 1)), taskRow('b', 'B', summary('b', 1))], 'page-2'))
    await settle()
    const page = h.socket.pending('ClientTasksPage')
    expect(page.variables).toEqual({ workspaceId: 'ws-1', first: 2, after: 'page-2' })
    expect(h.socket.named('ClientWorkspaceEvents')).toHaveLength(0) // not before the whole boot
    page.reply({ tasks: { edges: [{ node: taskRow('c', 'C', null) }], pageInfo: { hasNextPage: false, endCursor: null } } })
    await opened
    expect(Object.keys(h.client.summaries.getState().tasks)).toEqual(['a', 'b', 'c'])
    expect(h.client.summaries.getState()).toMatchObject({ status: 'live', cursor: 'boot-cursor' })
    expect(h.socket.pending('ClientWorkspaceEvents').variables).toEqual({ workspaceId: 'ws-1', after: 'boot-cursor' })
  })

  it('applies feed events to the store and keeps the last cursor', async () => {
    const h = harness()
    const feed = await openBooted(h, 'ws-1', 'c0', [taskRow('a', 'A', summary('a', 1))])
    feed.next(feedEvent.summary('c1', summary('a', 2, { foregroundActivity: 'GENERATING' })))
    feed.next(feedEvent.upserted('c2', taskRow('b', 'B', summary('b', 1))))
    const s = h.client.summaries.getState()
    expect(s.tasks.a!.summary).toMatchObject({ revision: 2, foregroundActivity: 'GENERATING' })
    expect(s.tasks.b!.title).toBe('B')
    expect(s.cursor).toBe('c2')
  })

  it('reads the row of a task whose summary arrives before the store holds it', async () => {
    const h = harness()
    const feed = await openBooted(h, 'ws-1', 'c0', [])
    feed.next(feedEvent.summary('c1', summary('late', 3)))
    await settle()
    const read = h.socket.pending('ClientTaskRow')
    expect(read.variables).toEqual({ id: 'late' })
    read.reply({ task: { workspaceId: 'ws-1', ...taskRow('late', 'Late', summary('late', 3)) } })
    await settle()
    expect(h.client.summaries.getState().tasks.late).toMatchObject({ title: 'Late', summary: { revision: 3 } })
  })

  it('opening another workspace drops the first one’s feed and late answers', async () => {
    const h = harness()
    const first = await openBooted(h, 'ws-1', 'c0', [taskRow('a', 'A', null)])
    const opened = h.client.openWorkspace('ws-2')
    expect(first.unsubscribed).toBe(true)
    first.next(feedEvent.upserted('c1', taskRow('x', 'X', null))) // late event of the old feed
    await settle()
    h.socket.pending('ClientBoot').reply(bootAnswer('d0', [taskRow('b', 'B', null)]))
    await opened
    expect(Object.keys(h.client.summaries.getState().tasks)).toEqual(['b'])
    expect(h.client.summaries.getState().workspaceId).toBe('ws-2')
  })

  it('an openWorkspace superseded while its boot is unanswered resolves quietly', async () => {
    const h = harness()
    const first = h.client.openWorkspace('ws-1')
    await settle()
    const second = h.client.openWorkspace('ws-2')
    await h.clock.advance(10_000) // both boots time out; only the second is asked again
    await expect(first).resolves.toBeUndefined()
    expect(h.socket.live('ClientBoot').map((o) => o.variables.workspaceId)).toEqual(['ws-2'])
    h.socket.pending('ClientBoot').reply(bootAnswer('d0', []))
    await expect(second).resolves.toBeUndefined()
    expect(h.client.summaries.getState()).toMatchObject({ workspaceId: 'ws-2', status: 'live' })
  })
})

describe('resume after a reconnect', () => {
  it('re-subscribes the feed with the last cursor received, and never refetches boot', async () => {
    const h = harness()
    const feed = await openBooted(h, 'ws-1', 'c0', [taskRow('a', 'A', summary('a', 1))])
    feed.next(feedEvent.summary('c1', summary('a', 2)))
    feed.next(feedEvent.summary('c2', summary('a', 3)))
    h.socket.close(1006)
    expect(h.client.connection.getState().status).toBe('reconnecting')
    await h.clock.advance(30_000)
    h.socket.ack()
    expect(h.sockets).toHaveLength(2)
    expect(h.socket.live('ClientWorkspaceEvents').map((o) => o.variables)).toEqual([{ workspaceId: 'ws-1', after: 'c2' }])
    // A second drop resumes from what the resumed subscription delivered.
    h.socket.pending('ClientWorkspaceEvents').next(feedEvent.summary('c3', summary('a', 4)))
    h.socket.close(1013)
    await h.clock.advance(30_000)
    h.socket.ack()
    expect(h.socket.pending('ClientWorkspaceEvents').variables).toEqual({ workspaceId: 'ws-1', after: 'c3' })
    const boots = h.sockets.flatMap((s) => s.named('ClientBoot'))
    expect(boots).toHaveLength(1)
    expect(h.client.summaries.getState().tasks.a!.summary?.revision).toBe(4)
  })

  it('WorkspaceResync { cursor-expired } refetches boot and follows on from its feedCursor', async () => {
    const h = harness()
    h.socket.close(1006)
    await h.clock.advance(30_000)
    h.socket.ack()
    const feed = await openBooted(h, 'ws-1', 'c0', [taskRow('a', 'A', summary('a', 1)), taskRow('gone', 'Gone', null)])
    feed.next(feedEvent.resync('cursor-expired'))
    expect(feed.unsubscribed).toBe(true)
    expect(h.client.summaries.getState()).toMatchObject({ status: 'resyncing', resyncs: 1 })
    await settle()
    h.socket.pending('ClientBoot').reply(bootAnswer('fresh', [taskRow('a', 'A', summary('a', 5))]))
    await settle()
    expect(h.client.summaries.getState()).toMatchObject({ status: 'live', cursor: 'fresh', resyncs: 1 })
    expect(Object.keys(h.client.summaries.getState().tasks)).toEqual(['a'])
    expect(h.socket.pending('ClientWorkspaceEvents').variables).toEqual({ workspaceId: 'ws-1', after: 'fresh' })
    expect(h.socket.named('ClientBoot')).toHaveLength(2)
  })

  it('a boot cut off by a drop is asked again on the next socket, then the feed follows', async () => {
    const h = harness()
    const opened = h.client.openWorkspace('ws-1')
    await settle()
    h.socket.close(1006)
    await h.clock.advance(30_000)
    h.socket.ack()
    await settle()
    expect(h.socket.named('ClientWorkspaceEvents')).toHaveLength(0)
    h.socket.pending('ClientBoot').reply(bootAnswer('c0', []))
    await opened
    expect(h.socket.pending('ClientWorkspaceEvents').variables).toEqual({ workspaceId: 'ws-1', after: 'c0' })
  })

  it('a feed the server ends with an error is subscribed again after a pause, from the last cursor', async () => {
    const h = harness()
    const feed = await openBooted(h, 'ws-1', 'c0', [])
    feed.next(feedEvent.upserted('c1', taskRow('a', 'A', null)))
    feed.fail('RATE_LIMITED')
    expect(h.socket.live('ClientWorkspaceEvents')).toHaveLength(0)
    await h.clock.advance(2_000)
    expect(h.socket.pending('ClientWorkspaceEvents').variables).toEqual({ workspaceId: 'ws-1', after: 'c1' })
    expect(h.socket.named('ClientBoot')).toHaveLength(1)
  })
})
