// tasks(orderBy:) against a listening server: every order total (ties broken by task id), pages
// that concatenate to the whole list with no gap and no duplicate, cursors that belong to one
// order, boot in the default order; and agentProfiles (names only, callers only).
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { AgentProfilesDocument, BootTaskIdsDocument, CreateTaskDocument, OrderedTasksDocument, type OrderedTasksQuery, type TaskOrder } from '../generated/graphql.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { createSession, setSessionError } from '../../src/store/sessions.ts'
import { startTurn } from '../../src/store/turns.ts'
import { updateTask } from '../../src/store/tasks.ts'

type Row = OrderedTasksQuery['tasks']['edges'][number]['node']

const byId = (a: string, b: string) => (a < b ? 1 : a > b ? -1 : 0) // ties: id descending
const time = (iso: string | null | undefined) => (iso ? Date.parse(iso) : 0)

/** The orders as the contract words them, computed here from what the rows show. */
const expected: Record<TaskOrder, (rows: Row[]) => string[]> = {
  LAST_ACTIVITY: (rows) => [...rows].sort((a, b) => time(b.statusSummary!.lastActivityAt) - time(a.statusSummary!.lastActivityAt) || byId(a.id, b.id)).map((r) => r.id),
  CREATED: (rows) => [...rows].sort((a, b) => time(b.createdAt) - time(a.createdAt) || byId(a.id, b.id)).map((r) => r.id),
  NEEDS_ATTENTION: (rows) => {
    const rank = (r: Row) => (r.statusSummary!.pendingAction ? 0 : r.statusSummary!.activeError ? 1 : 2)
    return [...rows]
      .sort(
        (a, b) =>
          rank(a) - rank(b) ||
          (rank(a) === 0
            ? time(a.statusSummary!.waitingSince) - time(b.statusSummary!.waitingSince)
            : time(b.statusSummary!.lastActivityAt) - time(a.statusSummary!.lastActivityAt)) ||
          byId(a.id, b.id),
      )
      .map((r) => r.id)
  },
}

describe.each(PROVIDERS)('tasks(orderBy:) (%s)', (provider) => {
  let server: TestServer
  let token: string
  let workspaceId: string
  // A clock that only moves when told: tasks created at one instant tie on every time.
  let now = Date.parse('2026-03-01T10:00:00Z')
  const tick = (ms = 60_000) => (now += ms)

  const page = async (orderBy: TaskOrder | undefined, first: number, after?: string | null) =>
    (await ok(server.graphqlUrl, token, OrderedTasksDocument, { workspaceId, first, after, ...(orderBy && { orderBy }) })).tasks
  const walk = async (orderBy: TaskOrder | undefined, first: number) => {
    const ids: string[] = []
    let after: string | null | undefined
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(50)
      const p = await page(orderBy, first, after)
      ids.push(...p.edges.map((e) => e.node.id))
      // Each edge's cursor resumes right after it, as endCursor does after the page.
      if (p.edges.length > 0) expect(p.pageInfo.endCursor).toBe(p.edges.at(-1)!.cursor)
      if (!p.pageInfo.hasNextPage) return ids
      after = p.pageInfo.endCursor
    }
  }

  beforeAll(async () => {
    server = await startTestServer(provider, { clock: () => new Date(now) })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'orders'))
    const create = async (title: string) =>
      (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask.id
    // Three created at one instant, two at another, one alone: ties on creation and activity.
    const tied = [await create('a'), await create('b'), await create('c')]
    tick()
    const pair = [await create('d'), await create('e')]
    tick()
    const alone = await create('f')
    tick()
    const more = [await create('g'), await create('h')]
    tick()
    // Waiting on the user: two requests raised at the same instant (a tie on waitingSince) and one earlier.
    const request = async (taskId: string, kind: 'PERMISSION_REQUEST' | 'CLARIFICATION', at: number) => {
      const session = await createSession(server.store, { taskId, agentProfile: 'mock', state: 'RUNNING' })
      const turn = await startTurn(server.store, { sessionId: session.id })
      await insertMessage(server.store, { id: randomUUID(), sessionId: session.id, turnId: turn.id, author: 'AGENT', kind, content: '?', status: 'PENDING', pendingId: randomUUID(), createdAt: new Date(at) })
      return session
    }
    const waitingAt = now
    await request(tied[1]!, 'PERMISSION_REQUEST', waitingAt)
    await request(pair[0]!, 'CLARIFICATION', waitingAt)
    await request(more[1]!, 'PERMISSION_REQUEST', waitingAt - 3_600_000)
    tick()
    // Errors: two tasks, one of them moved to a newer activity time.
    for (const taskId of [tied[2]!, alone]) {
      const session = await createSession(server.store, { taskId, agentProfile: 'mock', state: 'FAILED' })
      await setSessionError(server.store, session.id, { code: 'agent_crashed', message: 'boom', stamp: randomUUID(), occurredAt: new Date(now) })
    }
    tick()
    await updateTask(server.store, alone, { title: 'f edited' })
    await server.projector.idle()
  })
  afterAll(() => server?.close())

  it.each<TaskOrder>(['LAST_ACTIVITY', 'CREATED', 'NEEDS_ATTENTION'])('%s is total and its pages of 1, 2 and 3 concatenate to the whole order', async (order) => {
    const all = (await page(order, 500)).edges.map((e) => e.node)
    expect(all).toHaveLength(8)
    expect(all.map((r) => r.id)).toEqual(expected[order](all))
    for (const size of [1, 2, 3]) expect(await walk(order, size)).toEqual(all.map((r) => r.id))
  })

  it('NEEDS_ATTENTION puts the oldest wait first, then tied waits by id, then errors, then the rest', async () => {
    const all = (await page('NEEDS_ATTENTION', 500)).edges.map((e) => e.node)
    const kinds = all.map((r) => (r.statusSummary!.pendingAction ? 'waiting' : r.statusSummary!.activeError ? 'error' : 'rest'))
    expect(kinds).toEqual(['waiting', 'waiting', 'waiting', 'error', 'error', 'rest', 'rest', 'rest'])
    expect(time(all[0]!.statusSummary!.waitingSince)).toBeLessThan(time(all[1]!.statusSummary!.waitingSince))
    expect(all[1]!.statusSummary!.waitingSince).toBe(all[2]!.statusSummary!.waitingSince)
    expect(all[1]!.id > all[2]!.id).toBe(true)
  })

  it('the default is LAST_ACTIVITY, and boot lists in it', async () => {
    const ids = (await page(undefined, 500)).edges.map((e) => e.node.id)
    expect(ids).toEqual((await page('LAST_ACTIVITY', 500)).edges.map((e) => e.node.id))
    const boot = await ok(server.graphqlUrl, token, BootTaskIdsDocument, { workspaceId, first: 500 })
    expect(boot.boot.tasks.edges.map((e) => e.node.id)).toEqual(ids)
    // Its cursors are LAST_ACTIVITY positions: they continue a default list.
    const third = boot.boot.tasks.edges[2]!.cursor
    expect((await page(undefined, 500, third)).edges.map((e) => e.node.id)).toEqual(ids.slice(3))
  })

  it('a new wait moves a task to the front of NEEDS_ATTENTION, from the stored summary', async () => {
    const before = (await page('NEEDS_ATTENTION', 500)).edges.map((e) => e.node.id)
    const last = before.at(-1)!
    const session = await createSession(server.store, { taskId: last, agentProfile: 'mock', state: 'RUNNING' })
    const turn = await startTurn(server.store, { sessionId: session.id })
    await insertMessage(server.store, { id: randomUUID(), sessionId: session.id, turnId: turn.id, author: 'AGENT', kind: 'CLARIFICATION', content: '?', status: 'PENDING', pendingId: randomUUID(), createdAt: new Date(Date.parse('2026-01-01T00:00:00Z')) })
    await server.projector.idle()
    const after = (await page('NEEDS_ATTENTION', 500)).edges.map((e) => e.node.id)
    expect(after[0]).toBe(last)
    expect(after.slice(1)).toEqual(before.slice(0, -1))
    const row = await server.store.db.taskStatusSummary.findUniqueOrThrow({ where: { taskId: last } })
    expect(row).toMatchObject({ attentionRank: 0, attentionKey: Date.parse('2026-01-01T00:00:00Z') })
  })

  it('a cursor of one order continues no other, and a malformed one is refused: BAD_USER_INPUT', async () => {
    const cursors = {
      LAST_ACTIVITY: (await page('LAST_ACTIVITY', 1)).pageInfo.endCursor!,
      CREATED: (await page('CREATED', 1)).pageInfo.endCursor!,
      NEEDS_ATTENTION: (await page('NEEDS_ATTENTION', 1)).pageInfo.endCursor!,
    }
    for (const [from, cursor] of Object.entries(cursors))
      for (const order of ['LAST_ACTIVITY', 'CREATED', 'NEEDS_ATTENTION'] as const) {
        const result = await http(server.graphqlUrl, token, OrderedTasksDocument, { workspaceId, first: 2, after: cursor, orderBy: order })
        expect(errorCodes(result), `${from} cursor with ${order}`).toEqual(from === order ? [] : ['BAD_USER_INPUT'])
      }
    const forged = Buffer.from(JSON.stringify(['NEEDS_ATTENTION', 'zero', 0, 'x'])).toString('base64url')
    for (const after of ['not-a-cursor', forged])
      expect(errorCodes(await http(server.graphqlUrl, token, OrderedTasksDocument, { workspaceId, first: 2, after, orderBy: 'NEEDS_ATTENTION' }))).toEqual(['BAD_USER_INPUT'])
  })

  it('a task createTask answered is listed by NEEDS_ATTENTION at once; a row lost around the server is made again within the check interval', async () => {
    await page('NEEDS_ATTENTION', 500) // the workspace is known complete from here
    const created = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'fresh' } })).createTask.id
    expect((await page('NEEDS_ATTENTION', 500)).edges.map((e) => e.node.id)).toContain(created)

    await server.projector.idle()
    await server.store.db.taskStatusSummary.delete({ where: { taskId: created } })
    // Trusted complete for 5 s: the scan of the workspace does not run before every page.
    expect((await page('NEEDS_ATTENTION', 500)).edges.map((e) => e.node.id)).not.toContain(created)
    tick(5_000)
    const ids = (await page('NEEDS_ATTENTION', 500)).edges.map((e) => e.node.id)
    expect(ids).toContain(created)
    expect(ids).toHaveLength(new Set(ids).size)
  })
})

describe('agentProfiles', () => {
  let server: TestServer
  beforeAll(async () => {
    const secret = { command: ['/bin/sh', '-c', 'exit 0'], env: { API_KEY: 'sekret-value' } }
    server = await startTestServer('sqlite', { env: { AGENT_PROFILES: JSON.stringify({ zeta: secret, alpha: secret }) } })
  })
  afterAll(() => server?.close())

  it('lists the configured profile names and the built-in mock, to any caller, never a command or environment', async () => {
    const { token } = await userWithWorkspace(server, 'profiles')
    const result = await http(server.graphqlUrl, token, AgentProfilesDocument)
    expect(result.data?.agentProfiles).toEqual([{ name: 'alpha' }, { name: 'mock' }, { name: 'zeta' }])
    expect(JSON.stringify(result)).not.toMatch(/sekret|\/bin\/sh|API_KEY/)
    // The type has nothing else to select.
    const introspection = (await (
      await fetch(server.graphqlUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: '{ __type(name: "AgentProfile") { fields { name } } }' }),
      })
    ).json()) as { data: { __type: { fields: { name: string }[] } } }
    expect(introspection.data.__type.fields.map((f) => f.name)).toEqual(['name'])
  })

  it('requires an authenticated caller', async () => {
    expect(errorCodes(await http(server.graphqlUrl, undefined, AgentProfilesDocument))).toEqual(['UNAUTHENTICATED'])
  })
})
