// A PostgreSQL that is stopped (issue 31: 3.5 s, 68 of 68 queries answered 500 INTERNAL_SERVER_ERROR
// and /readyz stayed 200) is an outage to answer, not a failure: every operation that needs the
// database is UNAVAILABLE (HTTP 503 + Retry-After, the same code over WebSocket), /readyz 503 and
// /healthz 200 while it lasts, and service resumes by itself when the database is back
// (MAPPING.md "Outages and stalls"). Each suite runs on its own cluster, stopped with pg_ctl.
import { GraphQLError } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPostgresCluster, type PostgresCluster } from '../support/postgres-cluster.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsExecute } from '../support/client.ts'
import { summaryDrift } from '../support/summary-rebuild.ts'
import { eventually } from '../support/wait.ts'
import { deployMigrations } from '../../src/store/migrate.ts'
import { connectDatabase, isDatabaseSaturated, isDatabaseUnreachable, pingDatabase, POSTGRES_POOL_SIZE, type Db } from '../../src/store/db.ts'
import { DATABASE_UNREACHABLE_MESSAGE, maskError, UNEXPECTED_ERROR_MESSAGE } from '../../src/contract/client-errors.ts'
import { CreateTaskDocument, CreateWorkspaceDocument, UpdateTaskDocument, ViewerDocument } from '../generated/graphql.ts'
import { print } from 'graphql'

async function migratedCluster(): Promise<{ cluster: PostgresCluster; url: string }> {
  const cluster = await startPostgresCluster()
  try {
    await cluster.query('CREATE DATABASE app')
    const url = cluster.url('app')
    await deployMigrations('postgres', url)
    return { cluster, url }
  } catch (error) {
    cluster.stop()
    throw error
  }
}

const failure = (work: Promise<unknown>) =>
  work.then(
    () => undefined,
    (error: unknown) => error as Error & { code?: string },
  )

const describeError = (error: (Error & { code?: unknown; cause?: unknown }) | undefined) =>
  error && `${error.name}${error.code ? ` ${String(error.code)}` : ''}: ${error.message.split('\n').filter(Boolean).at(-1)}`

describe('which errors a stopped PostgreSQL raises, and that they count as unreachable (postgres)', () => {
  let cluster: PostgresCluster
  let db: Db
  let workspaceId: string

  beforeAll(async () => {
    const migrated = await migratedCluster()
    cluster = migrated.cluster
    db = await connectDatabase('postgres', migrated.url)
    workspaceId = (await db.workspace.create({ data: { name: 'w' } })).id
  }, 60_000)
  afterAll(async () => {
    await db?.$disconnect()
    cluster?.stop()
  })

  it('in flight at a fast or immediate stop, and begun while it is down: all unreachable, none saturated; back when it is', { timeout: 60_000 }, async () => {
    const seen: Record<string, Error | undefined> = {}
    // Fast stop (57P01 admin_shutdown to every session) with work in flight: a model update waiting
    // on a row lock, raw SQL, and an interactive transaction whose connection dies under it.
    const held = failure(
      db.$transaction(async (tx) => {
        await tx.$executeRaw`SELECT id FROM "Workspace" FOR UPDATE`
        await new Promise((r) => setTimeout(r, 1500))
        await tx.workspace.count()
      }),
    )
    await new Promise((r) => setTimeout(r, 200))
    const blocked = failure(db.workspace.update({ where: { id: workspaceId }, data: { name: 'changed' } }))
    const raw = failure(db.$queryRaw`SELECT pg_sleep(5)`)
    await new Promise((r) => setTimeout(r, 300))
    cluster.shutDown('fast')
    ;[seen['fast stop: model query in flight'], seen['fast stop: raw query in flight'], seen['fast stop: transaction in flight']] = await Promise.all([blocked, raw, held])

    // While it is down: a refused connection for every kind of work.
    seen['down: model query'] = await failure(db.workspace.count())
    seen['down: raw query'] = await failure(db.$queryRawUnsafe('SELECT 1'))
    seen['down: interactive transaction'] = await failure(db.$transaction(async (tx) => tx.workspace.count()))
    seen['down: batch transaction'] = await failure(db.$transaction([db.workspace.count()]))
    expect(await pingDatabase(db, 1000)).toBe(false)

    cluster.start()
    expect(await db.workspace.count()).toBe(1)
    expect(await pingDatabase(db, 1000)).toBe(true)

    // Immediate stop (as a crash): the connection just ends under the query.
    const cut = failure(db.$queryRaw`SELECT pg_sleep(5)`)
    await new Promise((r) => setTimeout(r, 300))
    cluster.shutDown('immediate')
    seen['immediate stop: raw query in flight'] = await cut
    cluster.start()
    expect(await db.workspace.findUniqueOrThrow({ where: { id: workspaceId } })).toMatchObject({ name: 'w' })

    console.info(`errors of a stopped PostgreSQL:\n${Object.entries(seen).map(([when, e]) => `  ${when}: ${describeError(e)}`).join('\n')}`)
    for (const [when, error] of Object.entries(seen)) {
      expect(error, when).toBeInstanceOf(Error)
      expect(isDatabaseUnreachable(error), when).toBe(true)
      expect(isDatabaseSaturated(error), when).toBe(false)
      const fromResolver = new GraphQLError(error!.message, { path: ['workspace'], originalError: error })
      const masked = maskError(fromResolver, UNEXPECTED_ERROR_MESSAGE, false) as GraphQLError
      expect(masked.message, when).toBe(DATABASE_UNREACHABLE_MESSAGE)
      expect(masked.extensions, when).toEqual({ code: 'UNAVAILABLE', http: { status: 503, headers: { 'Retry-After': '1' } } })
    }
  })

  it('transactions an outage cut give their connections back: the whole pool serves afterwards, and it can end', { timeout: 60_000 }, async () => {
    // Prisma sends ROLLBACK before releasing a transaction's connection; on a dead connection that
    // throws, and the connection used to stay checked out for good (3 of 10 here).
    const cut = Array.from({ length: 3 }, () =>
      failure(
        db.$transaction(async (tx) => {
          await tx.workspace.count()
          await new Promise((r) => setTimeout(r, 1000))
          await tx.workspace.count()
        }),
      ),
    )
    await new Promise((r) => setTimeout(r, 300))
    cluster.shutDown('fast')
    for (const error of await Promise.all(cut)) expect(isDatabaseUnreachable(error), describeError(error)).toBe(true)
    cluster.start()
    // Every connection of the pool at once, none waiting for another: a leaked one would leave some without.
    const all = await Promise.allSettled(
      Array.from({ length: POSTGRES_POOL_SIZE }, () => db.$transaction((tx) => tx.$executeRaw`SELECT pg_sleep(3)`, { maxWait: 2000 })),
    )
    expect(all.map((r) => (r.status === 'fulfilled' ? 'ok' : describeError(r.reason as Error)))).toEqual(Array(POSTGRES_POOL_SIZE).fill('ok'))
  })

  it('a real failure that retrying would not cure is not unreachable', async () => {
    const duplicate = await failure(db.$executeRawUnsafe('CREATE TEMP TABLE t (id int primary key); INSERT INTO t VALUES (1), (1)'))
    expect(duplicate).toBeDefined()
    expect(isDatabaseUnreachable(duplicate)).toBe(false)
    expect(isDatabaseUnreachable(new Error('P1001'))).toBe(false)
    expect(isDatabaseUnreachable(new Error('timeout exceeded when trying to connect'))).toBe(false)
  })
})

describe('a server whose PostgreSQL is stopped answers UNAVAILABLE and resumes by itself (postgres)', () => {
  let cluster: PostgresCluster
  let server: TestServer

  beforeAll(async () => {
    const migrated = await migratedCluster()
    cluster = migrated.cluster
    server = await startTestServer('postgres', { databaseUrl: migrated.url, env: { SESSION_LEASE_MS: '20000' } })
  }, 60_000)
  afterAll(async () => {
    await server?.close()
    cluster?.stop()
  })

  const post = (query: string, variables: Record<string, unknown> = {}) =>
    fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.adminToken}` },
      body: JSON.stringify({ query, variables }),
    })
  const status = async (path: string) => (await fetch(`${server.url}${path}`)).status

  it('queries and mutations over HTTP and WebSocket, /readyz 503 and /healthz 200 during; nothing half-written; a summary the outage missed is repaired', { timeout: 60_000 }, async () => {
    const workspaceId = (await ok(server.graphqlUrl, server.adminToken, CreateWorkspaceDocument, { name: 'outage' })).createWorkspace.id
    const taskId = (await ok(server.graphqlUrl, server.adminToken, CreateTaskDocument, { input: { workspaceId, title: 'before' } })).createTask.id
    const socket = await wsClient(server.wsUrl, server.adminToken)
    expect(await status('/readyz')).toBe(200)
    const tasksBefore = await server.store.db.task.count()
    // A source change the projector has not seen (no event): it is projected during the outage, and fails.
    await server.store.db.task.update({ where: { id: taskId }, data: { lastActivityAt: new Date(Date.now() + 60_000) } })

    cluster.shutDown('fast')
    try {
      const outageProjection = server.projector.project(taskId)
      const answers = [
        await post(print(ViewerDocument)),
        await post(print(CreateTaskDocument), { input: { workspaceId, title: 'during (http)' } }),
        await post(print(UpdateTaskDocument), { id: taskId, input: { title: 'during (http)' } }),
      ]
      for (const answer of answers) {
        expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '1'])
        const text = await answer.text()
        expect(text).not.toMatch(/P1001|P2010|ECONNREFUSED|prisma|127\.0\.0\.1|stack/i)
        const body = JSON.parse(text) as { errors: { message: string; extensions: { code: string } }[] }
        expect(body.errors.map((e) => [e.extensions.code, e.message])).toEqual([['UNAVAILABLE', DATABASE_UNREACHABLE_MESSAGE]])
      }
      const overWs = [
        await wsExecute(socket, ViewerDocument),
        await wsExecute(socket, CreateTaskDocument, { input: { workspaceId, title: 'during (ws)' } }),
        await wsExecute(socket, UpdateTaskDocument, { id: taskId, input: { title: 'during (ws)' } }),
      ]
      for (const result of overWs) expect(result.errors).toEqual([expect.objectContaining({ message: DATABASE_UNREACHABLE_MESSAGE, extensions: { code: 'UNAVAILABLE' } })])
      expect(await status('/readyz')).toBe(503)
      expect(await status('/healthz')).toBe(200)
      await outageProjection
      expect(server.projector.pendingRetries).toBe(1)
    } finally {
      cluster.start()
    }

    // Back by itself: ready again, the socket still serves, and nothing of the refused writes was stored.
    await eventually(async () => (await status('/readyz')) === 200, 10_000)
    expect(await status('/healthz')).toBe(200)
    expect(await server.store.db.task.count()).toBe(tasksBefore)
    expect((await server.store.db.task.findUniqueOrThrow({ where: { id: taskId } })).title).toBe('before')
    const after = await wsExecute(socket, UpdateTaskDocument, { id: taskId, input: { title: 'after' } })
    expect(after.errors).toBeUndefined()
    expect(after.data?.updateTask.title).toBe('after')
    // The projection the outage failed was tried again without a new source event.
    await eventually(async () => (await summaryDrift(server.store, [taskId])).length === 0 && server.projector.pendingRetries === 0, 15_000)
    await socket.dispose()
  })
})
