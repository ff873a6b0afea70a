// However a live turn ends, it leaves no message in progress: the agent's answer completes its
// messages, a cut-off (crash, stop) interrupts them, and an open session stream sees the final status.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  CreateWorkspaceDocument,
  SessionEventsDocument,
  StartSessionDocument,
  StopSessionDocument,
} from '../generated/graphql.ts'

const script = (...steps: object[]) => JSON.stringify({ script: steps })

describe('the end of a live turn (sqlite, real mock agent)', () => {
  let server: TestServer
  let workspaceId: string
  beforeAll(async () => {
    server = await startTestServer('sqlite')
    workspaceId = (await ok(server.graphqlUrl, server.adminToken, CreateWorkspaceDocument, { name: 'turn ends' })).createWorkspace.id
  })
  afterAll(() => server?.close())

  const session = async () => {
    const taskId = (await ok(server.graphqlUrl, server.adminToken, CreateTaskDocument, { input: { workspaceId, title: 't' } })).createTask.id
    const sessionId = (await ok(server.graphqlUrl, server.adminToken, StartSessionDocument, { input: { taskId } })).startSession.id
    const send = (content: string) =>
      ok(server.graphqlUrl, server.adminToken, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
    return { taskId, sessionId, send }
  }
  const userTurn = (sessionId: string) => server.store.db.turn.findFirstOrThrow({ where: { sessionId, lifecycleOnly: false } })
  const agentMessages = (sessionId: string) =>
    server.store.db.message.findMany({ where: { sessionId, author: 'AGENT' }, orderBy: { createdAt: 'asc' }, select: { kind: true, status: true } })

  it.each([
    { name: 'the agent answers', steps: [{ say: 'done', chunks: 3 }, { think: 'hmm' }], stopReason: 'end_turn', interrupted: false, status: 'COMPLETED' },
    { name: 'the agent answers with an error', steps: [{ say: 'partial' }, { error: { code: 'rate_limited', message: 'slow down' } }], stopReason: 'error', interrupted: false, status: 'COMPLETED' },
    { name: 'the agent crashes', steps: [{ say: 'partial' }, { crash: 3 }], stopReason: 'crashed', interrupted: true, status: 'INTERRUPTED' },
  ])('$name: the turn ends $stopReason (interrupted: $interrupted), every agent message $status', async ({ steps, stopReason, interrupted, status }) => {
    const s = await session()
    await s.send(script(...steps))
    const turn = await eventually(async () => {
      const t = await userTurn(s.sessionId)
      return t.completedAt !== null && t
    })
    expect(turn).toMatchObject({ stopReason, interrupted })
    const messages = await eventually(async () => {
      const m = await agentMessages(s.sessionId)
      return m.length >= steps.length - 1 && m
    })
    expect(messages.map((m) => m.status)).toEqual(messages.map(() => status))
  })

  it('stop mid-stream: the turn ends cancelled and interrupted, the partial message INTERRUPTED, and the open stream sees it before TurnCompleted', async () => {
    const s = await session()
    const client = await wsClient(server.wsUrl, server.adminToken)
    try {
      const events = wsSubscribe(client, SessionEventsDocument, { sessionId: s.sessionId })
      await events.waitFor(1)
      await s.send(script({ stream: { kind: 'message', count: 100_000 } }))
      await eventually(async () => (await agentMessages(s.sessionId)).length > 0)
      await ok(server.graphqlUrl, server.adminToken, StopSessionDocument, { id: s.sessionId })
      expect(await userTurn(s.sessionId)).toMatchObject({ stopReason: 'cancelled', interrupted: true })
      expect(await agentMessages(s.sessionId)).toEqual([{ kind: 'MESSAGE', status: 'INTERRUPTED' }])
      type Event = (typeof events.events)[number]
      const kinds = (list: Event[]) => list.map((e) => e.data?.sessionEvents.__typename)
      await eventually(() => kinds(events.events).includes('TurnCompleted'))
      const final = events.events.findIndex(
        (e) => e.data?.sessionEvents.__typename === 'MessageUpdated' && e.data.sessionEvents.message.status === 'INTERRUPTED',
      )
      expect(final).toBeGreaterThan(0)
      expect(final).toBeLessThan(kinds(events.events).indexOf('TurnCompleted'))
      events.dispose()
    } finally {
      await client.dispose()
    }
  })
})
