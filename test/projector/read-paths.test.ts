import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import {
  BootWithSummariesDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  TaskStatusSummariesDocument,
  TasksWithSummariesDocument,
  WorkflowWithSummariesDocument,
} from '../generated/graphql.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createSession } from '../../src/store/sessions.ts'
import { startTurn } from '../../src/store/turns.ts'
import { insertMessage } from '../../src/store/messages.ts'

describe.each(PROVIDERS)('summary read paths (%s)', (provider) => {
  let server: TestServer
  const statements: string[] = []
  let token: string
  let small: string
  let large: string
  let smallTaskIds: string[]

  async function workspaceWithTasks(name: string, count: number) {
    const id = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name })).createWorkspace.id
    const ids: string[] = []
    for (let i = 0; i < count; i++) {
      const task = await createTask(server.store, { workspaceId: id, title: `t${i}` })
      ids.push(task.id)
      // Some tasks have sessions and pending input, so the loaders have rows to batch.
      if (i % 5 === 0) {
        const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
        const turn = await startTurn(server.store, { sessionId: session.id })
        await insertMessage(server.store, {
          id: `perm-${task.id}`,
          sessionId: session.id,
          turnId: turn.id,
          author: 'AGENT',
          kind: 'PERMISSION_REQUEST',
          content: '?',
          status: 'PENDING',
          pendingId: `p-${task.id}`,
        })
      }
    }
    return { id, ids }
  }

  beforeAll(async () => {
    server = await startTestServer(provider, { onQuery: (sql) => statements.push(sql) })
    token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'u' })).createUser.token
    const s = await workspaceWithTasks('small', 10)
    small = s.id
    smallTaskIds = s.ids
    large = (await workspaceWithTasks('large', 500)).id
    await server.projector.idle()
  }, 120_000)
  afterAll(() => server?.close())

  async function countStatements(run: () => Promise<unknown>) {
    await server.projector.idle()
    statements.length = 0
    await run()
    return statements.length
  }

  it('tasks(first: N) with every statusSummary costs the same number of statements for 10 and 500 tasks', async () => {
    const tenRows = await countStatements(async () => {
      const { tasks } = await ok(server.graphqlUrl, token, TasksWithSummariesDocument, { workspaceId: small, first: 500 })
      expect(tasks.edges).toHaveLength(10)
      expect(tasks.edges.every((e) => e.node.statusSummary && e.node.statusSummary.revision >= 1)).toBe(true)
    })
    const fiveHundred = await countStatements(async () => {
      const { tasks } = await ok(server.graphqlUrl, token, TasksWithSummariesDocument, { workspaceId: large, first: 500 })
      expect(tasks.edges).toHaveLength(500)
      expect(tasks.edges.filter((e) => e.node.statusSummary?.pendingAction === 'PERMISSION')).toHaveLength(100)
    })
    console.info(`tasks statements: 10 tasks → ${tenRows}, 500 tasks → ${fiveHundred}`)
    expect(fiveHundred).toBe(tenRows)
  })

  it('boot and workflow batch their summaries the same way', async () => {
    const boot10 = await countStatements(() => ok(server.graphqlUrl, token, BootWithSummariesDocument, { workspaceId: small }))
    const boot500 = await countStatements(() => ok(server.graphqlUrl, token, BootWithSummariesDocument, { workspaceId: large }))
    expect(boot500).toBe(boot10)
    const flow10 = await countStatements(() => ok(server.graphqlUrl, token, WorkflowWithSummariesDocument, { workspaceId: small }))
    const flow500 = await countStatements(async () => {
      const { workflow } = await ok(server.graphqlUrl, token, WorkflowWithSummariesDocument, { workspaceId: large })
      expect(workflow.steps.flatMap((s) => s.tasks).every((t) => t.statusSummary !== null)).toBe(true)
    })
    expect(flow500).toBe(flow10)
  })

  it('rebuilds missing summary rows in batch: no statement per task', async () => {
    const rebuild = async (workspaceId: string, count: number) => {
      await server.store.db.taskStatusSummary.deleteMany({ where: { workspaceId } })
      const cost = await countStatements(async () => {
        const { tasks } = await ok(server.graphqlUrl, token, TasksWithSummariesDocument, { workspaceId, first: 500 })
        expect(tasks.edges.map((e) => e.node.statusSummary?.revision)).toEqual(Array(count).fill(1))
      })
      expect(await server.store.db.taskStatusSummary.count({ where: { workspaceId } })).toBe(count)
      return cost
    }
    const ten = await rebuild(small, 10)
    const fiveHundred = await rebuild(large, 500)
    console.info(`rebuild statements: 10 tasks → ${ten}, 500 tasks → ${fiveHundred}`)
    // One multi-row INSERT; Prisma splits it by SQLite's bind-parameter limit (9 columns: ~111 rows a statement).
    expect(fiveHundred - ten).toBeLessThanOrEqual(provider === 'sqlite' ? 4 : 0)
  })

  it('taskStatusSummaries answers null for unknown and unreadable ids and refuses more than 1000', async () => {
    const outsider = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'o' })).createUser.token
    const mine = await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: [smallTaskIds[0]!, 'unknown'] })
    expect(mine.taskStatusSummaries[0]?.taskId).toBe(smallTaskIds[0])
    expect(mine.taskStatusSummaries[1]).toBeNull()
    const theirs = await ok(server.graphqlUrl, outsider, TaskStatusSummariesDocument, { taskIds: [smallTaskIds[0]!] })
    expect(theirs.taskStatusSummaries).toEqual([null])
    const tooMany = await http(server.graphqlUrl, token, TaskStatusSummariesDocument, {
      taskIds: Array.from({ length: 1001 }, (_, i) => `id${i}`),
    })
    expect(errorCodes(tooMany)).toEqual(['BAD_USER_INPUT'])
  })
})
