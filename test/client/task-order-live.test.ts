// The SDK's sortTasks over the rows its store keeps live, against the server's own
// tasks(orderBy:) for every order: a switcher that sorts locally must list what the server lists.
// Tasks in every state the orders rank (waiting on a permission or a question since different
// times, with an error, idle after a turn, a turn cut off, renamed, plain), then changes made
// while the client follows the feed.
import { randomUUID } from 'node:crypto'
import WebSocket from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTaskClient, sortTasks, TASK_ORDERS, type TaskClient, type TaskOrder } from '../../packages/client/src/index.ts'
import { ClientTasksPageDocument } from '../../packages/client/src/generated/graphql.ts'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { CreateTaskDocument, DeleteTaskDocument, TaskStatusSummariesDocument, UpdateTaskDocument } from '../generated/graphql.ts'
import { cancelPendingRequests, insertMessage } from '../../src/store/messages.ts'
import { clearSessionError, createSession, setSessionError } from '../../src/store/sessions.ts'
import { closeTurn, completeTurn, startTurn } from '../../src/store/turns.ts'
import { insertPrompt } from '../../src/store/prompts.ts'

describe.each(PROVIDERS)('sortTasks over the live store equals tasks(orderBy:) (%s)', (provider) => {
  let server: TestServer
  let client: TaskClient
  let token: string
  let workspaceId: string
  const ids: Record<string, string> = {}
  // A clock that only moves when told: ties on every time are made on purpose, and broken by id.
  let now = Date.parse('2026-03-01T10:00:00Z')
  const tick = (ms = 60_000) => (now += ms)

  const serverOrder = async (orderBy: TaskOrder) =>
    (await ok(server.graphqlUrl, token, ClientTasksPageDocument, { workspaceId, first: 500, orderBy })).tasks.edges.map((e) => e.node.id)

  /** Waits until the store holds exactly the server's tasks, each at the summary revision the server holds. */
  async function caughtUp() {
    await server.projector.idle()
    const listed = await serverOrder('CREATED')
    await eventually(async () => {
      const stored = (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: listed })).taskStatusSummaries
      const rows = client.summaries.getState().tasks
      return Object.keys(rows).length === listed.length && stored.every((s) => s && rows[s.taskId]?.summary?.revision === s.revision)
    })
  }

  async function expectSameOrders(when: string) {
    await caughtUp()
    for (const order of TASK_ORDERS) {
      const local = sortTasks(Object.values(client.summaries.getState().tasks), order).map((r) => r.id)
      expect(local, `${order} ${when}`).toEqual(await serverOrder(order))
    }
  }

  const create = async (name: string) => {
    ids[name] = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: name } })).createTask.id
    return ids[name]
  }
  const session = (name: string, state: 'RUNNING' | 'FAILED' | 'WAITING_FOR_INPUT' = 'RUNNING') =>
    createSession(server.store, { taskId: ids[name]!, agentProfile: 'mock', state })
  /** An open request of `kind` raised at `at` on a turn in flight. */
  async function waitOn(name: string, kind: 'PERMISSION_REQUEST' | 'CLARIFICATION', at: number) {
    const s = await session(name)
    const turn = await startTurn(server.store, { sessionId: s.id })
    await insertMessage(server.store, { id: randomUUID(), sessionId: s.id, turnId: turn.id, author: 'AGENT', kind, content: '?', status: 'PENDING', pendingId: randomUUID(), createdAt: new Date(at) })
    return s
  }

  beforeAll(async () => {
    server = await startTestServer(provider, { clock: () => new Date(now) })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'orders-live'))
    // Created at three instants, two of them shared: CREATED and LAST_ACTIVITY ties broken by id.
    for (const name of ['plain', 'renamed', 'permOld']) await create(name)
    tick()
    for (const name of ['clar', 'permTie', 'errorA']) await create(name)
    tick()
    for (const name of ['errorB', 'idle', 'cutOff', 'queued']) await create(name)
    tick()
    await waitOn('permOld', 'PERMISSION_REQUEST', now - 3_600_000)
    const waitingAt = now
    await waitOn('clar', 'CLARIFICATION', waitingAt)
    await waitOn('permTie', 'PERMISSION_REQUEST', waitingAt)
    tick()
    for (const name of ['errorA', 'errorB']) {
      const s = await session(name, 'FAILED')
      await setSessionError(server.store, s.id, { code: 'agent_crashed', message: 'boom', stamp: randomUUID(), occurredAt: new Date(now) })
    }
    tick()
    const idle = await session('idle', 'WAITING_FOR_INPUT')
    await completeTurn(server.store, (await startTurn(server.store, { sessionId: idle.id })).id, 'end_turn')
    tick()
    const cut = await session('cutOff')
    const cutTurn = await startTurn(server.store, { sessionId: cut.id })
    tick()
    await closeTurn(server.store, cutTurn.id, { stopReason: 'interrupted', interrupted: true })
    tick()
    const queued = await session('queued')
    await startTurn(server.store, { sessionId: queued.id })
    tick()
    await insertPrompt(server.store, { sessionId: queued.id, clientMessageId: 'q1', content: 'later' })
    tick()
    await ok(server.graphqlUrl, token, UpdateTaskDocument, { id: ids.renamed!, input: { title: 'renamed, edited' } })
    await server.projector.idle()
    client = createTaskClient({ url: server.graphqlUrl, token, webSocketImpl: WebSocket, random: () => 0 })
    await client.openWorkspace(workspaceId)
  }, 60_000)
  afterAll(async () => {
    client?.dispose()
    await server?.close()
  })

  it('after boot, every order sorted locally is the order the server lists', async () => {
    await expectSameOrders('after boot')
    // The orders are not trivially equal to each other: the fixture ranks differently in each.
    const orders = await Promise.all(TASK_ORDERS.map(serverOrder))
    expect(new Set(orders.map((o) => o.join()))).toHaveProperty('size', 3)
    expect((await serverOrder('NEEDS_ATTENTION')).slice(0, 3)).toEqual([ids.permOld, ...[ids.clar!, ids.permTie!].sort().reverse()])
  })

  it('stays equal while the feed brings waits, answers, errors, prompts, renames, new and deleted tasks', async () => {
    tick()
    const late = await waitOn('plain', 'CLARIFICATION', now) // a new wait, newest of the waits
    tick()
    await clearSessionError(server.store, (await server.store.db.session.findFirstOrThrow({ where: { taskId: ids.errorA! } })).id)
    tick()
    await insertMessage(server.store, { id: randomUUID(), sessionId: (await session('idle')).id, author: 'USER', kind: 'MESSAGE', content: 'hello' })
    tick()
    await ok(server.graphqlUrl, token, UpdateTaskDocument, { id: ids.permOld!, input: { title: 'oldest wait, renamed' } })
    tick()
    await create('fresh')
    await expectSameOrders('after the first changes')

    // The request ends (its agent went away): the task leaves the waiting rank.
    expect(await cancelPendingRequests(server.store, late.id)).toBe(1)
    tick()
    await ok(server.graphqlUrl, token, DeleteTaskDocument, { id: ids.errorB! })
    await expectSameOrders('after an answer and a delete')
  }, 60_000)
})
