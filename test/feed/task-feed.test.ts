import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { feedEventOf } from '../../src/feed/task-feed.ts'
import type { SourceEventKind } from '../../src/store/store.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  StartSessionDocument,
  TaskStatusSummariesDocument,
  UpdateTaskDocument,
  WorkspaceEventsDocument,
} from '../generated/graphql.ts'

const ALL_KINDS: SourceEventKind[] = [
  'task.created', 'task.updated', 'task.deleted', 'session.created', 'session.changed', 'session.deleted',
  'turn.started', 'turn.changed', 'turn.completed', 'message.added', 'message.updated', 'message.deleted',
  'git.observed', 'pullRequest.observed', 'launchError.changed',
]

describe('workspace feed: which source events it carries', () => {
  it.each(ALL_KINDS)('%s', (kind) => {
    const event = feedEventOf({ kind, taskId: 't', workspaceId: 'w', sessionId: 's' })
    const expected = kind === 'task.deleted' ? 'TaskDeleted' : kind === 'task.created' || kind === 'task.updated' ? 'TaskUpserted' : undefined
    expect(event?.type).toBe(expected)
  })
})

describe('workspace feed while sessions stream (sqlite)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite')
  })
  afterAll(() => server?.close())

  it('carries summary revisions and no TaskUpserted for agent activity; a task edit is one TaskUpserted', async () => {
    const { token, workspaceId } = await userWithWorkspace(server, 'switcher')
    const gql = <R, V>(doc: Parameters<typeof ok<R, V>>[2], vars: V) => ok<R, V>(server.graphqlUrl, token, doc, ...([vars] as never))
    const tasks = await Promise.all(
      [0, 1, 2].map(async (i) => (await gql(CreateTaskDocument, { input: { workspaceId, title: `t${i}` } })).createTask.id),
    )
    const sessions = await Promise.all(tasks.map(async (taskId) => (await gql(StartSessionDocument, { input: { taskId } })).startSession.id))
    await server.projector.idle()

    const client = await wsClient(server.wsUrl, token)
    const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
    try {
      const stream = JSON.stringify({ script: [{ stream: { kind: 'message', count: 3000 } }, { say: 'done', chunks: 5 }] })
      await Promise.all(
        tasks.map((taskId, i) => gql(AddMessageDocument, { input: { taskId, sessionId: sessions[i]!, clientMessageId: randomUUID(), content: stream } })),
      )
      await Promise.all(sessions.map((id) => sessionSettled(server, id)))
      await server.projector.idle()
      const latest = (await gql(TaskStatusSummariesDocument, { taskIds: tasks })).taskStatusSummaries
      // Every summary revision published so far has reached the subscriber.
      await eventually(() =>
        latest.every((s) =>
          feed.events.some((e) => {
            const ev = e.data?.workspaceEvents
            return ev?.__typename === 'TaskStatusSummaryUpdated' && ev.taskId === s!.taskId && ev.summary.revision === s!.revision
          }),
        ),
      )
      const types = () => feed.events.map((e) => e.data?.workspaceEvents.__typename)
      expect(types().filter((t) => t === 'TaskUpserted')).toEqual([])
      expect(types().filter((t) => t === 'TaskStatusSummaryUpdated').length).toBeGreaterThan(0)

      await gql(UpdateTaskDocument, { id: tasks[0]!, input: { title: 'renamed' } })
      await eventually(() => types().includes('TaskUpserted'))
      const upserts = feed.events.map((e) => e.data?.workspaceEvents).filter((e) => e?.__typename === 'TaskUpserted')
      expect(upserts).toEqual([{ __typename: 'TaskUpserted', task: expect.objectContaining({ id: tasks[0], title: 'renamed' }) }])
    } finally {
      feed.dispose()
      await client.dispose()
    }
  })
})
