// A database too busy to take the work (no connection or transaction in time, a write conflict)
// is UNAVAILABLE to the client: retry, as for a server that is starting. It used to surface as
// INTERNAL_SERVER_ERROR ("the server broke"), which R1 (test/faults/r1-concurrent-sources.fault.ts)
// met for 20–50 % of 1,000 writes in flight over two instances.
import { GraphQLError } from 'graphql'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { http, wsClient, wsExecute } from '../support/client.ts'
import { connectDatabase, isDatabaseSaturated, POSTGRES_POOL_SIZE, TRANSACTION_OPTIONS, type Db } from '../../src/store/db.ts'
import { DATABASE_BUSY_MESSAGE, maskError, UNEXPECTED_ERROR_MESSAGE } from '../../src/contract/client-errors.ts'
import { Prisma } from '../../src/generated/postgres/client.ts'
import { CreateWorkspaceDocument, LinkGitHubRepositoryDocument } from '../generated/graphql.ts'
import { sign } from '../../src/github/signature.ts'

const SECRET = 'saturation-secret'

describe('a server whose database pool is exhausted answers UNAVAILABLE and changes nothing (postgres)', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('postgres', { env: { GITHUB_WEBHOOK_SECRET: SECRET } })
  })
  afterAll(() => server?.close())

  it('over HTTP and over WebSocket; a GitHub delivery is refused with 503 and is not recorded as processed', { timeout: 60_000 }, async () => {
    const socket = await wsClient(server.wsUrl, server.adminToken)
    const { id: workspaceId } = (await http(server.graphqlUrl, server.adminToken, CreateWorkspaceDocument, { name: 'linked' })).data!.createWorkspace
    await http(server.graphqlUrl, server.adminToken, LinkGitHubRepositoryDocument, { workspaceId, repository: 'acme/busy' })
    const workspaces = await server.store.db.workspace.count()
    const body = JSON.stringify({ action: 'opened', repository: { full_name: 'acme/busy' }, pull_request: { number: 1, html_url: 'https://github.com/acme/busy/pull/1', title: 'T', state: 'open', merged: false, draft: false, mergeable_state: 'clean', head: { ref: 'b' } } })
    const webhook = () =>
      fetch(`${server.url}/webhooks/github`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': 'busy-1', 'x-hub-signature-256': sign(SECRET, body) },
        body,
      })
    // Every connection of the server's own pool busy for longer than a request waits for one.
    const holdSeconds = TRANSACTION_OPTIONS.maxWait / 1000 + 3
    const busy = Array.from({ length: POSTGRES_POOL_SIZE }, () =>
      server.store.db.$transaction((tx) => tx.$executeRaw`SELECT pg_sleep(${holdSeconds})`, { timeout: (holdSeconds + 10) * 1000 }),
    )
    const [overHttp, overWs, delivered] = await Promise.all([
      http(server.graphqlUrl, server.adminToken, CreateWorkspaceDocument, { name: 'over http' }),
      wsExecute(socket, CreateWorkspaceDocument, { name: 'over ws' }),
      webhook(),
    ])
    await Promise.all(busy)
    expect([delivered.status, delivered.headers.get('retry-after')]).toEqual([503, '1'])
    expect(await server.store.db.webhookDelivery.count()).toBe(0)
    for (const result of [overHttp, overWs]) {
      expect(result.errors).toEqual([expect.objectContaining({ message: DATABASE_BUSY_MESSAGE, extensions: { code: 'UNAVAILABLE' } })])
      expect(JSON.stringify(result)).not.toMatch(/timeout exceeded|P20\d\d|Transaction API|prisma|stack/i)
    }
    expect(await server.store.db.workspace.count()).toBe(workspaces)
    await socket.dispose()
  })
})

/** As a resolver's failure reaches the error masking: wrapped by graphql-js with the field's path. */
const fromResolver = (error: Error) => new GraphQLError(error.message, { path: ['updateTask'], originalError: error })

describe('which database failures count as saturation (postgres)', () => {
  let db: Db
  let url: string

  beforeAll(async () => {
    url = await migratedDatabase('postgres')
    db = await connectDatabase('postgres', url)
  })
  afterAll(() => db?.$disconnect())

  it('a transaction that cannot get a connection in time (P2028, from the real pool) is UNAVAILABLE, with its path', async () => {
    // Every connection of the pool busy in a transaction for a moment; one more transaction cannot start.
    const busy = Array.from({ length: POSTGRES_POOL_SIZE }, () => db.$transaction((tx) => tx.$executeRaw`SELECT pg_sleep(1)`))
    const refused = await db.$transaction(async () => undefined, { maxWait: 50 }).then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    )
    await Promise.all(busy)
    expect(refused?.code).toBe('P2028')
    expect(isDatabaseSaturated(refused)).toBe(true)
    const masked = maskError(fromResolver(refused!), UNEXPECTED_ERROR_MESSAGE, false) as GraphQLError
    // Over HTTP a 503 with Retry-After (toClientError drops `http` over WebSocket, Yoga from the body).
    expect(masked.toJSON()).toEqual({ message: DATABASE_BUSY_MESSAGE, path: ['updateTask'], extensions: { code: 'UNAVAILABLE', http: { status: 503, headers: { 'Retry-After': '1' } } } })
  })

  it('a query outside a transaction that gets no pool connection in time (pg-pool\'s own error) is UNAVAILABLE too', async () => {
    // The pool the adapter uses, of one connection and a 1 s connect timeout instead of 10: the same error, raised by the same code.
    const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 1000 })
    try {
      const held = await pool.connect()
      const timedOut = await pool.query('SELECT 1').then(
        () => undefined,
        (error: unknown) => error as Error,
      )
      held.release()
      expect(timedOut?.message).toBe('timeout exceeded when trying to connect')
      expect(isDatabaseSaturated(timedOut)).toBe(true)
      // Raised outside any resolver (building the context), it reaches the masking unwrapped.
      expect((maskError(timedOut!, UNEXPECTED_ERROR_MESSAGE, false) as GraphQLError).extensions.code).toBe('UNAVAILABLE')
    } finally {
      await pool.end()
    }
  })

  it('write conflicts, pool timeouts and the connection limit are UNAVAILABLE too; a constraint violation is not', async () => {
    const known = (code: string) => new Prisma.PrismaClientKnownRequestError('database said no', { code, clientVersion: Prisma.prismaVersion.client })
    for (const code of ['P2024', 'P2034', 'P2037']) expect(isDatabaseSaturated(known(code)), code).toBe(true)
    // A real failure that retrying would not cure: a unique violation outside any handled path.
    const duplicate = await db.$executeRawUnsafe('CREATE TEMP TABLE t (id int primary key); INSERT INTO t VALUES (1), (1)').then(
      () => undefined,
      (error: unknown) => error as Error,
    )
    expect(duplicate).toBeDefined()
    expect(isDatabaseSaturated(duplicate)).toBe(false)
    expect((maskError(fromResolver(duplicate!), UNEXPECTED_ERROR_MESSAGE, false) as GraphQLError).extensions.code).toBe('INTERNAL_SERVER_ERROR')
    expect(isDatabaseSaturated(new Error('P2028'))).toBe(false)
  })
})
