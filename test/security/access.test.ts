// Access that ends when it should (contract v1.3), on one listening server with real graphql-ws
// clients. Each row: who does what, on which socket, and what must happen. The two-instance rows
// (PostgreSQL + Redis) are in access-instances.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { eventually } from '../support/wait.ts'
import {
  ADD_MEMBER,
  codes,
  CREATE_TASK,
  CREATE_WORKSPACE,
  DEACTIVATE,
  eventsArrive,
  gqlHttp,
  gqlHttpOk,
  newUser,
  newWorkspace,
  REMOVE_MEMBER,
  ROTATE,
  socket,
  WORKSPACE_EVENTS,
} from './support.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer('sqlite')
})
afterAll(async () => {
  await server?.close()
})

const createTask = (token: string, ws: string, title = 'ping') => gqlHttpOk(server.graphqlUrl, token, CREATE_TASK, { ws, title })

/** Subscribes to the workspace feed and waits until a task created there arrives (the stream is live). */
async function liveFeed(conn: Awaited<ReturnType<typeof socket>>, token: string, ws: string) {
  const sub = conn.subscribe(WORKSPACE_EVENTS, { ws })
  await eventually(async () => {
    await createTask(token, ws)
    return sub.events.length > 0
  }, 10_000)
  return sub
}

describe('token rotation', () => {
  it('a user rotating its own token over its socket gets the new token, then that socket closes with 4403', async () => {
    const user = await newUser(server.graphqlUrl, server.adminToken, 'self-rotator')
    const conn = await socket(server.wsUrl, user.token)
    const rotated = await conn.execute<{ rotateUserToken: { token: string } }>(ROTATE, { user: user.id })
    expect(rotated.errors).toBeUndefined()
    const newToken = rotated.data!.rotateUserToken.token
    expect(newToken).not.toBe(user.token)
    expect(await conn.closed()).toBe(4403)
    // The old token authenticates nothing new; the new one does.
    expect(codes(await gqlHttp(server.graphqlUrl, user.token, '{ viewer { user { id } } }'))).toEqual(['UNAUTHENTICATED'])
    await expect(socket(server.wsUrl, user.token)).rejects.toMatchObject({ code: 4403 })
    expect((await gqlHttpOk<{ viewer: { user: { id: string } } }>(server.graphqlUrl, newToken, '{ viewer { user { id } } }')).viewer.user.id).toBe(user.id)
  })

  it('the admin rotating a user closes every socket of the old token with 4403 and none of the new one', async () => {
    const user = await newUser(server.graphqlUrl, server.adminToken, 'rotated-by-admin')
    const ws = await newWorkspace(server.graphqlUrl, user.token, 'rotation')
    const old1 = await socket(server.wsUrl, user.token)
    const old2 = await socket(server.wsUrl, user.token)
    const feed = await liveFeed(old1, user.token, ws)
    const { rotateUserToken } = await gqlHttpOk<{ rotateUserToken: { token: string } }>(server.graphqlUrl, server.adminToken, ROTATE, { user: user.id })
    expect(await old1.closed()).toBe(4403)
    expect(await old2.closed()).toBe(4403)
    expect(feed.events.length).toBeGreaterThan(0)
    // A socket of the new token opened now keeps working after the old ones closed.
    const fresh = await socket(server.wsUrl, rotateUserToken.token)
    const after = await liveFeed(fresh, rotateUserToken.token, ws)
    expect(after.events.length).toBeGreaterThan(0)
    expect(fresh.closeCode).toBeUndefined()
    await fresh.dispose()
  })

  it('a mutation sent on an old socket right after rotation is refused and changes nothing', async () => {
    const user = await newUser(server.graphqlUrl, server.adminToken, 'late-mutation')
    const conn = await socket(server.wsUrl, user.token)
    await gqlHttpOk(server.graphqlUrl, server.adminToken, ROTATE, { user: user.id })
    // Sent at once, racing the close: either the socket is gone or the mutation is refused.
    const result = await conn.execute(CREATE_WORKSPACE, { name: 'must-not-exist' })
    expect(result.data?.createWorkspace).toBeFalsy()
    expect(await conn.closed()).toBe(4403)
    const workspaces = await gqlHttpOk<{ viewer: { workspaces: { name: string }[] } }>(
      server.graphqlUrl,
      (await gqlHttpOk<{ rotateUserToken: { token: string } }>(server.graphqlUrl, server.adminToken, ROTATE, { user: user.id })).rotateUserToken.token,
      '{ viewer { workspaces { name } } }',
    )
    expect(workspaces.viewer.workspaces.map((w) => w.name)).not.toContain('must-not-exist')
  })

  it('another user may not rotate someone else’s token (FORBIDDEN), and an unknown id is NOT_FOUND for the admin', async () => {
    const a = await newUser(server.graphqlUrl, server.adminToken, 'a')
    const b = await newUser(server.graphqlUrl, server.adminToken, 'b')
    expect(codes(await gqlHttp(server.graphqlUrl, a.token, ROTATE, { user: b.id }))).toEqual(['FORBIDDEN'])
    expect(codes(await gqlHttp(server.graphqlUrl, server.adminToken, ROTATE, { user: 'no-such-user' }))).toEqual(['NOT_FOUND'])
    // b's token still works: the refused call changed nothing.
    expect((await gqlHttp(server.graphqlUrl, b.token, '{ viewer { user { id } } }')).errors).toBeUndefined()
  })
})

describe('deactivation', () => {
  it('a deactivated user mid-subscription: its socket closes with 4403, HTTP is UNAUTHENTICATED, users lists it inactive', async () => {
    const user = await newUser(server.graphqlUrl, server.adminToken, 'deactivated')
    const ws = await newWorkspace(server.graphqlUrl, user.token, 'deactivation')
    const conn = await socket(server.wsUrl, user.token)
    await liveFeed(conn, user.token, ws)
    const { deactivateUser } = await gqlHttpOk<{ deactivateUser: { active: boolean } }>(server.graphqlUrl, server.adminToken, DEACTIVATE, { user: user.id })
    expect(deactivateUser.active).toBe(false)
    expect(await conn.closed()).toBe(4403)
    expect(codes(await gqlHttp(server.graphqlUrl, user.token, '{ viewer { user { id } } }'))).toEqual(['UNAUTHENTICATED'])
    await expect(socket(server.wsUrl, user.token)).rejects.toMatchObject({ code: 4403 })
    const { users } = await gqlHttpOk<{ users: { id: string; active: boolean }[] }>(server.graphqlUrl, server.adminToken, '{ users { id active } }')
    expect(users.find((u) => u.id === user.id)).toEqual({ id: user.id, active: false })
    // Its tokens cannot be brought back by rotation.
    expect(codes(await gqlHttp(server.graphqlUrl, server.adminToken, ROTATE, { user: user.id }))).toEqual(['BAD_USER_INPUT'])
  })

  it('only the admin deactivates or lists users; the admin itself cannot be deactivated', async () => {
    const user = await newUser(server.graphqlUrl, server.adminToken, 'not-admin')
    expect(codes(await gqlHttp(server.graphqlUrl, user.token, DEACTIVATE, { user: user.id }))).toEqual(['FORBIDDEN'])
    expect(codes(await gqlHttp(server.graphqlUrl, user.token, '{ users { id } }'))).toEqual(['FORBIDDEN'])
    const admin = await gqlHttpOk<{ viewer: { user: { id: string } } }>(server.graphqlUrl, server.adminToken, '{ viewer { user { id } } }')
    expect(codes(await gqlHttp(server.graphqlUrl, server.adminToken, DEACTIVATE, { user: admin.viewer.user.id }))).toEqual(['BAD_USER_INPUT'])
    expect((await gqlHttp(server.graphqlUrl, user.token, '{ viewer { user { id } } }')).errors).toBeUndefined()
  })
})

describe('membership removal', () => {
  it('a removed member: its subscription in that workspace ends with FORBIDDEN, its second workspace goes on, its next operation there is FORBIDDEN', async () => {
    const owner = await newUser(server.graphqlUrl, server.adminToken, 'owner')
    const member = await newUser(server.graphqlUrl, server.adminToken, 'member')
    const shared = await newWorkspace(server.graphqlUrl, owner.token, 'shared')
    const own = await newWorkspace(server.graphqlUrl, member.token, 'own')
    await gqlHttpOk(server.graphqlUrl, owner.token, ADD_MEMBER, { ws: shared, user: member.id })
    const conn = await socket(server.wsUrl, member.token)
    const sharedFeed = await liveFeed(conn, owner.token, shared)
    const ownFeed = await liveFeed(conn, member.token, own)
    const sessionsOfShared = conn.subscribe(`subscription ($ws: ID!) { taskStatusSummaryUpdated(workspaceId: $ws) { taskId } }`, { ws: shared })

    const removed = await gqlHttpOk<{ removeWorkspaceMember: { members: { id: string }[] } }>(server.graphqlUrl, owner.token, REMOVE_MEMBER, { ws: shared, user: member.id })
    expect(removed.removeWorkspaceMember.members.map((m) => m.id)).toEqual([owner.id])

    expect(await sharedFeed.endedWith()).toEqual(['FORBIDDEN'])
    expect(await sessionsOfShared.endedWith()).toEqual(['FORBIDDEN'])
    const seen = sharedFeed.events.length
    await createTask(owner.token, shared, 'after removal')
    const before = ownFeed.events.length
    await createTask(member.token, own, 'still followed')
    await eventsArrive(ownFeed, before + 1)
    expect(sharedFeed.events.length).toBe(seen)
    expect(conn.closeCode).toBeUndefined()
    expect(codes(await conn.execute(CREATE_TASK, { ws: shared, title: 'x' }))).toEqual(['FORBIDDEN'])
    expect(codes(await gqlHttp(server.graphqlUrl, member.token, `query ($ws: ID!) { boot(workspaceId: $ws) { feedCursor } }`, { ws: shared }))).toEqual(['FORBIDDEN'])
    await conn.dispose()
  })

  it('sessionEvents of a removed member end with FORBIDDEN', async () => {
    const owner = await newUser(server.graphqlUrl, server.adminToken, 'session-owner')
    const member = await newUser(server.graphqlUrl, server.adminToken, 'session-member')
    const ws = await newWorkspace(server.graphqlUrl, owner.token, 'sessions')
    await gqlHttpOk(server.graphqlUrl, owner.token, ADD_MEMBER, { ws, user: member.id })
    const { createTask: task } = await gqlHttpOk<{ createTask: { id: string } }>(server.graphqlUrl, owner.token, CREATE_TASK, { ws, title: 't' })
    const { startSession } = await gqlHttpOk<{ startSession: { id: string } }>(
      server.graphqlUrl,
      owner.token,
      `mutation ($task: ID!) { startSession(input: { taskId: $task }) { id } }`,
      { task: task.id },
    )
    const conn = await socket(server.wsUrl, member.token)
    const stream = conn.subscribe(`subscription ($s: ID!) { sessionEvents(sessionId: $s) { __typename } }`, { s: startSession.id })
    await eventsArrive(stream, 1) // SessionJoined
    await gqlHttpOk(server.graphqlUrl, server.adminToken, REMOVE_MEMBER, { ws, user: member.id })
    expect(await stream.endedWith()).toEqual(['FORBIDDEN'])
    expect(conn.closeCode).toBeUndefined()
    await conn.dispose()
  })

  it('members lists the workspace’s users; a non-member may not remove anyone (FORBIDDEN) and nothing changes', async () => {
    const owner = await newUser(server.graphqlUrl, server.adminToken, 'list-owner')
    const stranger = await newUser(server.graphqlUrl, server.adminToken, 'stranger')
    const ws = await newWorkspace(server.graphqlUrl, owner.token, 'listed')
    expect(codes(await gqlHttp(server.graphqlUrl, stranger.token, REMOVE_MEMBER, { ws, user: owner.id }))).toEqual(['FORBIDDEN'])
    const { boot } = await gqlHttpOk<{ boot: { workspace: { members: { id: string; name: string; active: boolean }[] } } }>(
      server.graphqlUrl,
      owner.token,
      `query ($ws: ID!) { boot(workspaceId: $ws) { workspace { members { id name active } } } }`,
      { ws },
    )
    expect(boot.workspace.members).toEqual([{ id: owner.id, name: 'list-owner', active: true }])
  })
})

describe('what the server holds', () => {
  it('frees every access entry once the sockets that took them are gone', async () => {
    const user = await newUser(server.graphqlUrl, server.adminToken, 'tables')
    const ws = await newWorkspace(server.graphqlUrl, user.token, 'tables')
    await eventually(() => server.access.heldCount === 0)
    const conn = await socket(server.wsUrl, user.token)
    const feed = await liveFeed(conn, user.token, ws)
    expect(feed.ended).toBeUndefined()
    expect(server.access.heldCount).toBe(2) // the socket's token, the subscription's workspace
    await conn.dispose()
    await eventually(() => server.access.heldCount === 0)
  })
})

describe('subscriptions over HTTP (server-sent events)', () => {
  it('a removed member’s event stream ends with FORBIDDEN', async () => {
    const owner = await newUser(server.graphqlUrl, server.adminToken, 'sse-owner')
    const member = await newUser(server.graphqlUrl, server.adminToken, 'sse-member')
    const ws = await newWorkspace(server.graphqlUrl, owner.token, 'sse')
    await gqlHttpOk(server.graphqlUrl, owner.token, ADD_MEMBER, { ws, user: member.id })
    const response = await fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${member.token}` },
      body: JSON.stringify({ query: `subscription ($ws: ID!) { workspaceEvents(workspaceId: $ws) { __typename } }`, variables: { ws } }),
    })
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/)
    const reader = response.body!.getReader()
    let text = ''
    const read = (async () => {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        text += new TextDecoder().decode(value)
      }
    })()
    await eventually(async () => {
      await createTask(owner.token, ws)
      return text.includes('TaskUpserted')
    })
    await gqlHttpOk(server.graphqlUrl, owner.token, REMOVE_MEMBER, { ws, user: member.id })
    await eventually(() => text.includes('FORBIDDEN'), 10_000)
    await Promise.race([read, eventually(() => false, 10_000).catch(() => reader.cancel())])
  })
})
