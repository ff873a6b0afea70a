import { BOOTSTRAP_ADMIN_ID } from '../../src/store/users.ts'
import { mkdtempSync, realpathSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import {
  AddWorkspaceMemberDocument,
  BootDocument,
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  DeleteTaskDocument,
  TaskDocument,
  TasksDocument,
  UpdateTaskDocument,
  ViewerDocument,
  WorkflowDocument,
} from '../generated/graphql.ts'

describe.each(PROVIDERS)('workspaces and tasks over HTTP (%s)', (provider) => {
  let server: TestServer
  let url: string
  let admin: string
  let alice: { id: string; token: string }
  let bob: { id: string; token: string }
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer(provider)
    url = server.graphqlUrl
    admin = server.adminToken
    const a = (await ok(url, admin, CreateUserDocument, { name: 'Alice' })).createUser
    const b = (await ok(url, admin, CreateUserDocument, { name: 'Bob' })).createUser
    alice = { id: a.user.id, token: a.token }
    bob = { id: b.user.id, token: b.token }
    workspaceId = (await ok(url, alice.token, CreateWorkspaceDocument, { name: 'Alpha' })).createWorkspace.id
  })
  afterAll(() => server?.close())

  it('answers viewer for the admin token', async () => {
    const { viewer } = await ok(url, admin, ViewerDocument)
    expect(viewer.user.name).toBe('admin')
    expect(viewer.user.id).toBe(BOOTSTRAP_ADMIN_ID)
  })

  it('refuses a missing or unknown token with UNAUTHENTICATED', async () => {
    expect(errorCodes(await http(url, undefined, ViewerDocument))).toEqual(['UNAUTHENTICATED'])
    expect(errorCodes(await http(url, 'tss_not-a-token', ViewerDocument))).toEqual(['UNAUTHENTICATED'])
  })

  it('lets only the admin create users, and stores only a hash of the token', async () => {
    expect(errorCodes(await http(url, alice.token, CreateUserDocument, { name: 'Mallory' }))).toEqual(['FORBIDDEN'])
    const created = (await ok(url, admin, CreateUserDocument, { name: 'Carol' })).createUser
    const rows = await server.store.db.apiToken.findMany({ where: { userId: created.user.id } })
    expect(rows).toHaveLength(1)
    expect(rows[0]!.tokenHash).not.toContain(created.token)
    expect((await ok(url, created.token, ViewerDocument)).viewer.user.name).toBe('Carol')
  })

  it('rejects an empty user name with BAD_USER_INPUT and stores nothing', async () => {
    const before = await server.store.db.user.count()
    expect(errorCodes(await http(url, admin, CreateUserDocument, { name: '   ' }))).toEqual(['BAD_USER_INPUT'])
    expect(await server.store.db.user.count()).toBe(before)
  })

  it('creates a workspace with the default workflow, Done terminal, and the creator as member', async () => {
    const { workflow } = await ok(url, alice.token, WorkflowDocument, { workspaceId })
    expect(workflow.steps.map((s) => [s.name, s.position, s.terminal])).toEqual([
      ['Backlog', 0, false],
      ['In progress', 1, false],
      ['Review', 2, false],
      ['Done', 3, true],
    ])
    const { viewer } = await ok(url, alice.token, ViewerDocument)
    expect(viewer.workspaces.map((w) => w.id)).toContain(workspaceId)
  })

  it('checks membership on every read and mutation of a workspace', async () => {
    const task = (await ok(url, alice.token, CreateTaskDocument, { input: { workspaceId, title: 'private' } })).createTask
    expect(errorCodes(await http(url, bob.token, WorkflowDocument, { workspaceId }))).toEqual(['FORBIDDEN'])
    expect(errorCodes(await http(url, bob.token, TasksDocument, { workspaceId }))).toEqual(['FORBIDDEN'])
    expect(errorCodes(await http(url, bob.token, BootDocument, { workspaceId }))).toEqual(['FORBIDDEN'])
    expect(errorCodes(await http(url, bob.token, TaskDocument, { id: task.id }))).toEqual(['FORBIDDEN'])
    expect(
      errorCodes(await http(url, bob.token, UpdateTaskDocument, { id: task.id, input: { title: 'hijacked' } })),
    ).toEqual(['FORBIDDEN'])
    expect(errorCodes(await http(url, bob.token, DeleteTaskDocument, { id: task.id }))).toEqual(['FORBIDDEN'])
    expect(
      errorCodes(await http(url, bob.token, CreateTaskDocument, { input: { workspaceId, title: 'intruder' } })),
    ).toEqual(['FORBIDDEN'])
    expect(errorCodes(await http(url, bob.token, AddWorkspaceMemberDocument, { workspaceId, userId: bob.id }))).toEqual(
      ['FORBIDDEN'],
    )
    const stored = await server.store.db.task.findUniqueOrThrow({ where: { id: task.id } })
    expect(stored.title).toBe('private')
    expect(await server.store.db.task.count({ where: { title: 'intruder' } })).toBe(0)
  })

  it('lets a member or the admin add members', async () => {
    const other = (await ok(url, bob.token, CreateWorkspaceDocument, { name: 'Bob’s' })).createWorkspace.id
    expect(errorCodes(await http(url, alice.token, WorkflowDocument, { workspaceId: other }))).toEqual(['FORBIDDEN'])
    await ok(url, bob.token, AddWorkspaceMemberDocument, { workspaceId: other, userId: alice.id })
    expect((await ok(url, alice.token, WorkflowDocument, { workspaceId: other })).workflow.workspaceId).toBe(other)
    const third = (await ok(url, admin, CreateUserDocument, { name: 'Dan' })).createUser
    await ok(url, admin, AddWorkspaceMemberDocument, { workspaceId: other, userId: third.user.id })
    expect((await ok(url, third.token, ViewerDocument)).viewer.workspaces.map((w) => w.id)).toEqual([other])
  })

  it('answers NOT_FOUND for unknown ids', async () => {
    expect(errorCodes(await http(url, alice.token, TaskDocument, { id: 'missing' }))).toEqual(['NOT_FOUND'])
    expect(errorCodes(await http(url, alice.token, WorkflowDocument, { workspaceId: 'missing' }))).toEqual([
      'NOT_FOUND',
    ])
    expect(
      errorCodes(await http(url, alice.token, AddWorkspaceMemberDocument, { workspaceId, userId: 'missing' })),
    ).toEqual(['NOT_FOUND'])
  })

  it('creates a task in the first step with its repositories', async () => {
    const checkout = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'tss-web-'))) // inside REPOSITORY_ROOTS
    const { createTask } = await ok(url, alice.token, CreateTaskDocument, {
      input: {
        workspaceId,
        title: '  Fix login  ',
        description: 'The login form loses focus.',
        repositories: [
          { name: 'acme/web', localPath: checkout, baseBranch: 'main', branch: 'fix-login' },
          { name: 'acme/api' },
        ],
      },
    })
    const { workflow } = await ok(url, alice.token, WorkflowDocument, { workspaceId })
    expect(createTask.title).toBe('Fix login')
    expect(createTask.workflowStepId).toBe(workflow.steps[0]!.id)
    expect(createTask.repositories.map((r) => [r.name, r.localPath, r.baseBranch, r.branch])).toEqual([
      ['acme/web', checkout, 'main', 'fix-login'],
      ['acme/api', null, null, null],
    ])
    expect((await ok(url, alice.token, TaskDocument, { id: createTask.id })).task).toEqual(createTask)
  })

  it('rejects bad task input with BAD_USER_INPUT and stores nothing', async () => {
    const before = await server.store.db.task.count()
    const other = (await ok(url, bob.token, CreateWorkspaceDocument, { name: 'Elsewhere' })).createWorkspace.id
    const foreignStep = (await ok(url, bob.token, WorkflowDocument, { workspaceId: other })).workflow.steps[0]!.id
    for (const input of [
      { workspaceId, title: '' },
      { workspaceId, title: 'x'.repeat(501) },
      { workspaceId, title: 'ok', workflowStepId: foreignStep },
      { workspaceId, title: 'ok', repositories: [{ name: ' ' }] },
    ]) {
      expect(errorCodes(await http(url, alice.token, CreateTaskDocument, { input }))).toEqual(['BAD_USER_INPUT'])
    }
    expect(await server.store.db.task.count()).toBe(before)
  })

  it('updates a task, moving updatedAt, and refuses a step of another workspace', async () => {
    const task = (await ok(url, alice.token, CreateTaskDocument, { input: { workspaceId, title: 'move me' } })).createTask
    const steps = (await ok(url, alice.token, WorkflowDocument, { workspaceId })).workflow.steps
    await new Promise((r) => setTimeout(r, 5)) // distinct millisecond stamps; no timing is asserted
    const { updateTask } = await ok(url, alice.token, UpdateTaskDocument, {
      id: task.id,
      input: { title: 'moved', workflowStepId: steps[1]!.id, description: null },
    })
    expect(updateTask).toMatchObject({ title: 'moved', workflowStepId: steps[1]!.id, description: null })
    expect(new Date(updateTask.updatedAt).getTime()).toBeGreaterThan(new Date(task.updatedAt).getTime())
    const other = (await ok(url, bob.token, CreateWorkspaceDocument, { name: 'Far' })).createWorkspace.id
    const foreignStep = (await ok(url, bob.token, WorkflowDocument, { workspaceId: other })).workflow.steps[0]!.id
    const refused = await http(url, alice.token, UpdateTaskDocument, {
      id: task.id,
      input: { workflowStepId: foreignStep, title: 'should not stick' },
    })
    expect(errorCodes(refused)).toEqual(['BAD_USER_INPUT'])
    expect((await ok(url, alice.token, TaskDocument, { id: task.id })).task).toMatchObject({
      title: 'moved',
      workflowStepId: steps[1]!.id,
    })
  })

  it('clears a task-owned launch error when the task moves to a terminal step', async () => {
    const task = (await ok(url, alice.token, CreateTaskDocument, { input: { workspaceId, title: 'launch' } })).createTask
    await server.store.db.taskLaunchError.create({
      data: { taskId: task.id, stamp: 's1', message: 'base branch missing', occurredAt: new Date() },
    })
    const steps = (await ok(url, alice.token, WorkflowDocument, { workspaceId })).workflow.steps
    await ok(url, alice.token, UpdateTaskDocument, { id: task.id, input: { workflowStepId: steps[2]!.id } })
    expect((await server.store.db.taskLaunchError.findUniqueOrThrow({ where: { taskId: task.id } })).clearedAt).toBeNull()
    await ok(url, alice.token, UpdateTaskDocument, { id: task.id, input: { workflowStepId: steps[3]!.id } })
    expect(
      (await server.store.db.taskLaunchError.findUniqueOrThrow({ where: { taskId: task.id } })).clearedAt,
    ).toBeInstanceOf(Date)
  })

  it('deletes a task with its dependent rows, and a second delete is NOT_FOUND', async () => {
    const task = (
      await ok(url, alice.token, CreateTaskDocument, { input: { workspaceId, title: 'doomed', repositories: [{ name: 'r' }] } })
    ).createTask
    await server.projector.idle()
    expect(await server.store.db.taskStatusSummary.count({ where: { taskId: task.id } })).toBe(1)
    expect((await ok(url, alice.token, DeleteTaskDocument, { id: task.id })).deleteTask).toBe(task.id)
    expect(await server.store.db.taskRepository.count({ where: { taskId: task.id } })).toBe(0)
    expect(await server.store.db.taskStatusSummary.count({ where: { taskId: task.id } })).toBe(0)
    expect(errorCodes(await http(url, alice.token, DeleteTaskDocument, { id: task.id }))).toEqual(['NOT_FOUND'])
  })

  it('pages tasks newest activity first with opaque cursors', async () => {
    const ws = (await ok(url, alice.token, CreateWorkspaceDocument, { name: 'Paging' })).createWorkspace.id
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      ids.push((await ok(url, alice.token, CreateTaskDocument, { input: { workspaceId: ws, title: `t${i}` } })).createTask.id)
      await new Promise((r) => setTimeout(r, 2))
    }
    // Touching the oldest task makes it the newest activity.
    await ok(url, alice.token, UpdateTaskDocument, { id: ids[0]!, input: { title: 't0 edited' } })
    const expected = [ids[0], ids[4], ids[3], ids[2], ids[1]]
    const seen: string[] = []
    let after: string | null | undefined
    for (;;) {
      const { tasks } = await ok(url, alice.token, TasksDocument, { workspaceId: ws, first: 2, after })
      seen.push(...tasks.edges.map((e) => e.node.id))
      if (!tasks.pageInfo.hasNextPage) break
      after = tasks.pageInfo.endCursor
    }
    expect(seen).toEqual(expected)
    const all = (await ok(url, alice.token, TasksDocument, { workspaceId: ws })).tasks
    expect(all.pageInfo).toEqual({ hasNextPage: false, endCursor: all.edges[4]!.cursor })
  })

  it('enforces the tasks page limit and cursor validity', async () => {
    expect(errorCodes(await http(url, alice.token, TasksDocument, { workspaceId, first: 501 }))).toEqual([
      'BAD_USER_INPUT',
    ])
    expect(errorCodes(await http(url, alice.token, TasksDocument, { workspaceId, first: -1 }))).toEqual([
      'BAD_USER_INPUT',
    ])
    expect(errorCodes(await http(url, alice.token, TasksDocument, { workspaceId, after: 'garbage' }))).toEqual([
      'BAD_USER_INPUT',
    ])
    const { tasks } = await ok(url, alice.token, TasksDocument, { workspaceId, first: 500 })
    expect(tasks.edges.length).toBeGreaterThan(0)
  })

  it('serves boot state: workspace, workflow, tasks and server time', async () => {
    const { boot } = await ok(url, alice.token, BootDocument, { workspaceId })
    expect(boot.workspace).toEqual({ id: workspaceId, name: 'Alpha' })
    expect(boot.workflow.steps).toHaveLength(4)
    expect(boot.tasks.edges.length).toBeGreaterThan(0)
    expect(Math.abs(new Date(boot.serverTime).getTime() - Date.now())).toBeLessThan(60_000)
  })

})
