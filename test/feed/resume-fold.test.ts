// A resume with the SDK's own subscription sends each changed task once, a renamed one as its
// TaskUpserted alone (its current summary inside), and leaves the SDK's store where a boot refetch
// would: after the whole replay, and after a cut-off anywhere in it and a resume from the last
// cursor kept. Live delivery is unchanged: a rename is still its TaskUpserted and its summary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Client } from 'graphql-ws'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { createTask, deleteTask, updateTask } from '../../src/store/tasks.ts'
import { createSession } from '../../src/store/sessions.ts'
import { decodeFeedCursor } from '../../src/feed/cursor.ts'
import { ClientBootDocument, ClientWorkspaceEventsDocument, type ClientWorkspaceEventsSubscription } from '../../packages/client/src/generated/graphql.ts'
import { applyBoot, applyFeedEvent, initialSummaryState, startBoot } from '../../packages/client/src/summary-store.ts'
import type { SummaryState } from '../../packages/client/src/types.ts'

type FeedEvent = ClientWorkspaceEventsSubscription['workspaceEvents']

describe('a resume sends one event per changed task where the subscription allows (sqlite, the SDK document)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string
  let client: Client
  const taskIds: string[] = []

  beforeAll(async () => {
    server = await startTestServer('sqlite')
    ;({ token, workspaceId } = await userWithWorkspace(server, 'folder'))
    for (let i = 0; i < 40; i++) taskIds.push((await createTask(server.store, { workspaceId, title: `task ${i}` })).id)
    await server.projector.idle()
    client = await wsClient(server.wsUrl, token)
  }, 60_000)
  afterAll(async () => {
    await client?.dispose()
    await server?.close()
  })

  /** The SDK's store after a boot refetch now (every task fits one page). */
  async function booted(): Promise<SummaryState> {
    const { boot } = await ok(server.graphqlUrl, token, ClientBootDocument, { workspaceId, first: 300 })
    expect(boot.tasks.pageInfo.hasNextPage).toBe(false)
    return applyBoot(startBoot(initialSummaryState(), workspaceId), workspaceId, boot.feedCursor, boot.tasks.edges.map((e) => e.node))
  }

  /** Resumes after `after` until the feed reached `head`: the events received, in order. */
  async function resume(after: string, head: string): Promise<FeedEvent[]> {
    const sub = wsSubscribe(client, ClientWorkspaceEventsDocument, { workspaceId, after })
    const events = () => sub.events.map((e) => (e.errors ? expect.fail(JSON.stringify(e.errors)) : e.data!.workspaceEvents))
    await eventually(() => events().at(-1)?.cursor === head)
    sub.dispose()
    return events()
  }

  const apply = (state: SummaryState, events: FeedEvent[]) => events.reduce(applyFeedEvent, state)
  const idOf = (e: FeedEvent) => (e.__typename === 'TaskUpserted' ? e.task.id : e.__typename === 'WorkspaceResync' ? 'resync' : e.taskId)

  it('renamed and created tasks arrive as their upsert alone, active ones as their summary, deleted ones as TaskDeleted; the store ends as after a boot, wherever the replay was cut', async () => {
    const before = await booted()
    const renamed = taskIds.slice(0, 8)
    const renamedTwice = taskIds.slice(8, 10)
    const active = taskIds.slice(10, 16)
    const deleted = taskIds.slice(16, 18)
    // Interleaved, so that upserts and summaries of different tasks alternate in the feed.
    for (const [i, id] of renamed.entries()) {
      await updateTask(server.store, id, { title: `renamed ${i}` })
      if (active[i]) await createSession(server.store, { taskId: active[i], agentProfile: 'mock', state: 'IDLE' })
    }
    for (const id of renamedTwice) await updateTask(server.store, id, { title: 'draft' })
    await server.projector.idle()
    for (const id of renamedTwice) await updateTask(server.store, id, { title: 'final' })
    for (const id of deleted) await deleteTask(server.store, id)
    const created = [(await createTask(server.store, { workspaceId, title: 'new one' })).id, (await createTask(server.store, { workspaceId, title: 'new two' })).id]
    await server.projector.idle()
    const after = await booted()

    const events = await resume(before.cursor!, after.cursor!)
    const kinds = new Map(events.map((e) => [idOf(e), e.__typename]))
    expect(events.map(idOf).sort()).toEqual([...renamed, ...renamedTwice, ...active, ...deleted, ...created].sort())
    for (const id of [...renamed, ...renamedTwice, ...created]) expect(kinds.get(id), id).toBe('TaskUpserted')
    for (const id of active) expect(kinds.get(id), id).toBe('TaskStatusSummaryUpdated')
    for (const id of deleted) expect(kinds.get(id), id).toBe('TaskDeleted')
    // The renamed tasks' summaries moved (their activity time): the upserts carry those revisions.
    for (const id of renamed) expect(before.tasks[id]!.summary!.revision).toBeLessThan(after.tasks[id]!.summary!.revision)
    const sequences = events.map((e) => decodeFeedCursor(e.cursor!).sequence)
    for (let i = 1; i < sequences.length; i++) expect(sequences[i]).toBeGreaterThan(sequences[i - 1]!)

    expect(apply(before, events)).toEqual(after)
    // Cut off after any event: the cursor kept then resumes to the same state, with no gap.
    for (let k = 1; k < events.length; k++) {
      const cut = apply(before, events.slice(0, k))
      const rest = await resume(cut.cursor!, after.cursor!)
      expect(apply(cut, rest), `cut after ${k} of ${events.length}`).toEqual(after)
    }
  }, 60_000)

  it('live, a rename is still two events: its TaskUpserted and its TaskStatusSummaryUpdated', async () => {
    const start = (await booted()).cursor!
    const sub = wsSubscribe(client, ClientWorkspaceEventsDocument, { workspaceId, after: start })
    await eventually(() => server.gateway.tableSizes().subscriptions === 1)
    await updateTask(server.store, taskIds[30]!, { title: 'renamed live' })
    await server.projector.idle()
    const head = (await booted()).cursor
    await eventually(() => sub.events.at(-1)?.data?.workspaceEvents.cursor === head)
    expect(sub.events.map((e) => e.data!.workspaceEvents.__typename)).toEqual(['TaskUpserted', 'TaskStatusSummaryUpdated'])
    sub.dispose()
  })
})
