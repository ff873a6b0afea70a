// Access that ends when it should, across instances: two server processes on one PostgreSQL
// database and one redis-server, as behind a load balancer without stickiness. A change made on
// one instance ends what the other holds open. Each row: the change, where it is made, where the
// socket is, what must happen.
import type { ChildProcess } from 'node:child_process'
import { afterAll, describe, expect, it } from 'vitest'
import { instanceCluster } from '../support/instance-cluster.ts'
import { INSTANCE_ADMIN_TOKEN, killAll, startInstance } from '../support/instances.ts'
import { eventually } from '../support/wait.ts'
import { ADD_MEMBER, codes, CREATE_TASK, CREATE_WORKSPACE, DEACTIVATE, gqlHttp, gqlHttpOk, newUser, newWorkspace, REMOVE_MEMBER, ROTATE, socket, WORKSPACE_EVENTS } from './support.ts'

const cluster = instanceCluster(['a', 'b'])
const extra: ChildProcess[] = []
afterAll(() => killAll(extra))

const admin = INSTANCE_ADMIN_TOKEN

describe('two instances on PostgreSQL + Redis', () => {
  it('rotation on instance a closes the old token’s sockets on a and on b with 4403', async () => {
    const [a, b] = cluster.instances
    const user = await newUser(a.url, admin, 'rotated-across')
    const onA = await socket(a.wsUrl, user.token)
    const onB = await socket(b.wsUrl, user.token)
    const { rotateUserToken } = await gqlHttpOk<{ rotateUserToken: { token: string } }>(a.url, admin, ROTATE, { user: user.id })
    expect(await onA.closed()).toBe(4403)
    expect(await onB.closed()).toBe(4403)
    // Each instance refuses the old token and takes the new one.
    for (const instance of [a, b]) {
      expect(codes(await gqlHttp(instance.url, user.token, '{ viewer { user { id } } }'))).toEqual(['UNAUTHENTICATED'])
      expect((await gqlHttp(instance.url, rotateUserToken.token, '{ viewer { user { id } } }')).errors).toBeUndefined()
    }
  })

  it('a mutation sent on b’s old socket right after rotation on a is refused and changes nothing', async () => {
    const [a, b] = cluster.instances
    const user = await newUser(a.url, admin, 'late-across')
    const onB = await socket(b.wsUrl, user.token)
    await gqlHttpOk(a.url, admin, ROTATE, { user: user.id })
    const result = await onB.execute(CREATE_WORKSPACE, { name: 'must-not-exist-across' })
    expect(result.data?.createWorkspace).toBeFalsy()
    expect(await onB.closed()).toBe(4403)
    const { users } = await gqlHttpOk<{ users: { id: string }[] }>(a.url, admin, '{ users { id } }')
    expect(users.map((u) => u.id)).toContain(user.id)
    const rows = await gqlHttpOk<{ rotateUserToken: { token: string } }>(a.url, admin, ROTATE, { user: user.id })
    const { viewer } = await gqlHttpOk<{ viewer: { workspaces: { name: string }[] } }>(b.url, rows.rotateUserToken.token, '{ viewer { workspaces { name } } }')
    expect(viewer.workspaces).toEqual([])
  })

  it('deactivation on b closes the user’s subscribed socket on a with 4403', async () => {
    const [a, b] = cluster.instances
    const user = await newUser(a.url, admin, 'deactivated-across')
    const ws = await newWorkspace(a.url, user.token, 'deactivated-across')
    const onA = await socket(a.wsUrl, user.token)
    const feed = onA.subscribe(WORKSPACE_EVENTS, { ws })
    await eventually(async () => {
      await gqlHttpOk(b.url, user.token, CREATE_TASK, { ws, title: 'ping' })
      return feed.events.length > 0
    })
    await gqlHttpOk(b.url, admin, DEACTIVATE, { user: user.id })
    expect(await onA.closed()).toBe(4403)
  })

  it('removal on a ends the member’s feed on b with FORBIDDEN; its second workspace on the same socket goes on', async () => {
    const [a, b] = cluster.instances
    const owner = await newUser(a.url, admin, 'owner-across')
    const member = await newUser(a.url, admin, 'member-across')
    const shared = await newWorkspace(a.url, owner.token, 'shared-across')
    const own = await newWorkspace(a.url, member.token, 'own-across')
    await gqlHttpOk(a.url, owner.token, ADD_MEMBER, { ws: shared, user: member.id })
    const onB = await socket(b.wsUrl, member.token)
    const sharedFeed = onB.subscribe(WORKSPACE_EVENTS, { ws: shared })
    const ownFeed = onB.subscribe(WORKSPACE_EVENTS, { ws: own })
    await eventually(async () => {
      await gqlHttpOk(a.url, owner.token, CREATE_TASK, { ws: shared, title: 'ping' })
      await gqlHttpOk(a.url, member.token, CREATE_TASK, { ws: own, title: 'ping' })
      return sharedFeed.events.length > 0 && ownFeed.events.length > 0
    })
    await gqlHttpOk(a.url, owner.token, REMOVE_MEMBER, { ws: shared, user: member.id })
    expect(await sharedFeed.endedWith()).toEqual(['FORBIDDEN'])
    const before = ownFeed.events.length
    await gqlHttpOk(a.url, member.token, CREATE_TASK, { ws: own, title: 'after removal' })
    await eventually(() => ownFeed.events.length > before)
    expect(onB.closeCode).toBeUndefined()
    expect(codes(await onB.execute(CREATE_TASK, { ws: shared, title: 'x' }))).toEqual(['FORBIDDEN'])
    await onB.dispose()
  })

  it('a new ADMIN_TOKEN on a starting instance acts as a rotation: the admin’s old sockets on the others close with 4403', async () => {
    const [a] = cluster.instances
    const adminSocket = await socket(a.wsUrl, admin)
    const newAdminToken = 'instances-admin-token-rotated-0123456789'
    const c = await startInstance('c', { DATABASE_URL: cluster.databaseUrl, REDIS_URL: cluster.redis.url, ADMIN_TOKEN: newAdminToken }, extra)
    expect(await adminSocket.closed()).toBe(4403)
    expect(codes(await gqlHttp(a.url, admin, '{ users { id } }'))).toEqual(['UNAUTHENTICATED'])
    expect((await gqlHttp(c.url, newAdminToken, '{ users { id } }')).errors).toBeUndefined()
    expect((await gqlHttp(a.url, newAdminToken, '{ users { id } }')).errors).toBeUndefined()
  })
})
