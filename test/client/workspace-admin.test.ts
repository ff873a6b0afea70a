import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createTaskClient, TaskClientError, type TaskClient } from '../../packages/client/src/index.ts'
import { MOCK_PROFILE } from '../../src/agents/profiles.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { TaskDocument, ViewerDocument } from '../generated/graphql.ts'

/** The code of the TaskClientError the call fails with (fails the test when it succeeds or throws anything else). */
async function refusal(call: Promise<unknown>): Promise<string> {
  const error: unknown = await call.then(
    () => new Error('expected a refusal'),
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(TaskClientError)
  return (error as TaskClientError).code
}

describe('the SDK’s workspace, task, profile, user and member calls against a listening server (sqlite)', () => {
  let server: TestServer
  let admin: TaskClient
  let member: TaskClient
  let memberWorkspaceId: string
  let checkout: string
  const clients: TaskClient[] = []
  const clientFor = (token: string) => {
    const client = createTaskClient({ url: server.graphqlUrl, token, webSocketImpl: WebSocket, random: () => 0 })
    clients.push(client)
    return client
  }

  beforeAll(async () => {
    // A second profile (the mock agent under another name): startSession must launch the one asked for.
    server = await startTestServer('sqlite', { env: { AGENT_PROFILES: JSON.stringify({ 'mock-second': MOCK_PROFILE }) } })
    checkout = mkdtempSync(path.join(os.tmpdir(), 'tss-admin-checkout-'))
    const created = await userWithWorkspace(server, 'Member')
    memberWorkspaceId = created.workspaceId
    admin = clientFor(server.adminToken)
    member = clientFor(created.token)
  })
  afterAll(async () => {
    for (const client of clients) client.dispose()
    await server?.close()
    rmSync(checkout, { recursive: true, force: true })
  })

  it('creates a workspace (the caller is its member); a blank name is BAD_USER_INPUT and creates nothing', async () => {
    const workspace = await admin.createWorkspace('  Acme  ')
    expect(workspace).toEqual({ id: expect.any(String), name: 'Acme' })
    const viewer = await admin.viewer()
    expect(viewer.workspaces).toEqual([workspace])
    expect((await admin.workspaceMembers(workspace.id)).members.map((u) => u.id)).toEqual([viewer.user.id])

    expect(await refusal(admin.createWorkspace('   '))).toBe('BAD_USER_INPUT')
    expect((await admin.viewer()).workspaces).toEqual([workspace])
  })

  it('creates a task with repositories, which the workspace feed brings into the store; bad input is BAD_USER_INPUT, a stranger’s workspace FORBIDDEN', async () => {
    const workspace = await admin.createWorkspace('Tasks')
    await admin.openWorkspace(workspace.id)
    const task = await admin.createTask({
      workspaceId: workspace.id,
      title: 'Fix the build',
      description: 'It is red.',
      repositories: [{ name: 'acme/web', localPath: checkout }, { name: 'acme/api', baseBranch: 'main' }],
    })
    expect(task).toMatchObject({ workspaceId: workspace.id, title: 'Fix the build', description: 'It is red.' })
    expect(task.repositories.map(({ name, localPath, baseBranch }) => ({ name, localPath, baseBranch }))).toEqual([
      { name: 'acme/web', localPath: expect.stringContaining('tss-admin-checkout-'), baseBranch: null },
      { name: 'acme/api', localPath: null, baseBranch: 'main' },
    ])
    const stored = (await ok(server.graphqlUrl, server.adminToken, TaskDocument, { id: task.id })).task
    expect(stored?.title).toBe('Fix the build')
    await expect.poll(() => admin.summaries.getState().tasks[task.id]?.title).toBe('Fix the build')

    const before = Object.keys(admin.summaries.getState().tasks).length
    expect(await refusal(admin.createTask({ workspaceId: workspace.id, title: ' ' }))).toBe('BAD_USER_INPUT')
    expect(await refusal(admin.createTask({ workspaceId: workspace.id, title: 'Outside', repositories: [{ name: 'x', localPath: '/etc' }] }))).toBe('BAD_USER_INPUT')
    expect(await refusal(member.createTask({ workspaceId: workspace.id, title: 'Not mine' }))).toBe('FORBIDDEN')
    // A fence: the feed delivered whatever those calls could have created.
    await admin.viewer()
    expect(Object.keys(admin.summaries.getState().tasks)).toHaveLength(before)
  })

  it('lists the agent profiles and starts a session of the chosen one; an unknown profile is BAD_USER_INPUT', async () => {
    expect((await member.agentProfiles()).map((p) => p.name)).toEqual(['mock', 'mock-second'])
    const task = await member.createTask({ workspaceId: memberWorkspaceId, title: 'Profiles' })
    const session = await member.startSession(task.id, 'hello', { agentProfile: 'mock-second' })
    expect(session).toMatchObject({ taskId: task.id, agentProfile: 'mock-second', isPrimary: true })
    await sessionSettled(server, session.id)
    // A second session of the same task is allowed; it is not the primary one.
    const second = await member.startSession(task.id)
    expect(second).toMatchObject({ agentProfile: 'mock', isPrimary: false })
    await sessionSettled(server, second.id)
    expect(await refusal(member.startSession(task.id, undefined, { agentProfile: 'no-such-profile' }))).toBe('BAD_USER_INPUT')
  })

  it('tells the admin from a user: users() is FORBIDDEN to a user, so isAdmin() is false there', async () => {
    expect(await admin.isAdmin()).toBe(true)
    expect(await member.isAdmin()).toBe(false)
    expect(await refusal(member.users())).toBe('FORBIDDEN')
  })

  it('creates a user whose token works once shown; rotating stops the old token; deactivating stops every token', async () => {
    const issued = await admin.createUser('Dana')
    expect(issued.user).toMatchObject({ name: 'Dana', active: true })
    expect((await ok(server.graphqlUrl, issued.token, ViewerDocument)).viewer.user.id).toBe(issued.user.id)
    expect((await admin.users()).find((u) => u.id === issued.user.id)).toEqual(issued.user)

    const rotated = await admin.rotateUserToken(issued.user.id)
    expect(rotated.user.id).toBe(issued.user.id)
    expect(rotated.token).not.toBe(issued.token)
    expect(errorCodes(await http(server.graphqlUrl, issued.token, ViewerDocument))).toEqual(['UNAUTHENTICATED'])
    expect((await ok(server.graphqlUrl, rotated.token, ViewerDocument)).viewer.user.id).toBe(issued.user.id)

    const deactivated = await admin.deactivateUser(issued.user.id)
    expect(deactivated).toEqual({ id: issued.user.id, name: 'Dana', active: false })
    expect(errorCodes(await http(server.graphqlUrl, rotated.token, ViewerDocument))).toEqual(['UNAUTHENTICATED'])
    expect((await admin.users()).find((u) => u.id === issued.user.id)?.active).toBe(false)

    expect(await refusal(admin.createUser(''))).toBe('BAD_USER_INPUT')
    expect(await refusal(admin.rotateUserToken(issued.user.id))).toBe('BAD_USER_INPUT') // deactivated
    expect(await refusal(admin.deactivateUser('no-such-user'))).toBe('NOT_FOUND')
    expect(await refusal(member.createUser('Eve'))).toBe('FORBIDDEN')
    expect(await refusal(member.rotateUserToken(issued.user.id))).toBe('FORBIDDEN')
    expect(await refusal(member.deactivateUser(issued.user.id))).toBe('FORBIDDEN')
    expect((await admin.users()).map((u) => u.name)).not.toContain('Eve')
  })

  it('adds and removes members (the admin, or a member); a stranger is FORBIDDEN, an unknown user NOT_FOUND', async () => {
    const { token: outsiderToken } = await userWithWorkspace(server, 'Outsider')
    const outsider = clientFor(outsiderToken)
    const outsiderId = (await outsider.viewer()).user.id
    const memberId = (await member.viewer()).user.id

    const added = await member.addWorkspaceMember(memberWorkspaceId, outsiderId)
    expect(added.members.map((u) => u.id).sort()).toEqual([memberId, outsiderId].sort())
    expect((await outsider.viewer()).workspaces.map((w) => w.id)).toContain(memberWorkspaceId)

    const removed = await admin.removeWorkspaceMember(memberWorkspaceId, outsiderId)
    expect(removed.members.map((u) => u.id)).toEqual([memberId])
    expect((await outsider.viewer()).workspaces.map((w) => w.id)).not.toContain(memberWorkspaceId)

    expect(await refusal(outsider.addWorkspaceMember(memberWorkspaceId, outsiderId))).toBe('FORBIDDEN')
    expect(await refusal(outsider.workspaceMembers(memberWorkspaceId))).toBe('FORBIDDEN')
    expect(await refusal(member.addWorkspaceMember(memberWorkspaceId, 'no-such-user'))).toBe('NOT_FOUND')
    expect((await member.workspaceMembers(memberWorkspaceId)).members.map((u) => u.id)).toEqual([memberId])
  })
})
