import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestServer } from '../support/server.ts'
import { startTwinServers, type TwinServers } from '../support/twin-servers.ts'
import { http, ok } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  StartSessionDocument,
  UpdateTaskDocument,
  WorkflowDocument,
} from '../generated/graphql.ts'
import { wholeContents } from '../../src/store/message-content.ts'

describe('addMessage across two server instances on one PostgreSQL and one Redis', () => {
  let twins: TwinServers | undefined
  let a: TestServer
  let b: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    ;({ a, b } = twins = await startTwinServers())
    token = (await ok(a.graphqlUrl, a.adminToken, CreateUserDocument, { name: 'dev' })).createUser.token
    workspaceId = (await ok(a.graphqlUrl, token, CreateWorkspaceDocument, { name: 'pg' })).createWorkspace.id
  })
  afterAll(() => twins?.close())

  it('100 concurrent requests with one id, split over both instances, store one message and start one turn', async () => {
    const taskId = (await ok(a.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'dup' } })).createTask.id
    const sessionId = (await ok(a.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const clientMessageId = randomUUID()
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        http((i % 2 ? b : a).graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId, content: 'once' } }),
      ),
    )
    expect(results.flatMap((r) => r.errors ?? [])).toEqual([])
    expect(results.filter((r) => r.data?.addMessage.replayed === false)).toHaveLength(1)
    expect(await a.store.db.message.count({ where: { clientMessageId } })).toBe(1)
    const turns = await a.store.db.turn.findMany({ where: { sessionId, lifecycleOnly: false } })
    expect(turns).toHaveLength(1)
    await eventually(async () => (await a.store.db.turn.findFirstOrThrow({ where: { id: turns[0]!.id } })).completedAt)

    // Dispatched once, by the session's owner (A started it); B forwarded its requests there.
    const winner = a
    const loser = b
    expect(winner.sessions.runtime(sessionId)?.dispatchedPrompts).toBe(1)
    expect(loser.sessions.runtime(sessionId)?.dispatchedPrompts ?? 0).toBe(0)
    // The agent that got it received it once: `count` through the same instance answers 2 (once + count).
    await ok(winner.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: 'count' } })
    await eventually(async () => {
      const done = await a.store.db.turn.count({ where: { sessionId, lifecycleOnly: false, completedAt: { not: null } } })
      return done === 2
    })
    const messages = await wholeContents(a.store, await a.store.db.message.findMany({ where: { sessionId, author: 'AGENT', kind: 'MESSAGE' }, orderBy: { createdAt: 'asc' } }))
    expect(messages.at(-1)?.content).toBe('prompts received: 2')
    expect(winner.sessions.runtime(sessionId)?.dispatchedPrompts).toBe(2)
    expect(loser.sessions.runtime(sessionId)?.dispatchedPrompts ?? 0).toBe(0)
  })

  it('moving a task to a terminal step completes its sessions', async () => {
    const taskId = (await ok(a.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'finish' } })).createTask.id
    const sessionId = (await ok(a.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
    const done = (await ok(a.graphqlUrl, token, WorkflowDocument, { workspaceId })).workflow.steps.find((s) => s.terminal)!
    await ok(a.graphqlUrl, token, UpdateTaskDocument, { id: taskId, input: { workflowStepId: done.id } })
    expect((await a.store.db.session.findUniqueOrThrow({ where: { id: sessionId } })).state).toBe('COMPLETED')
    expect(a.sessions.runtime(sessionId)).toBeUndefined()
  })
})
