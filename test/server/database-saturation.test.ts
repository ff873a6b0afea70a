// A database too busy to take the work (no connection or transaction in time, a write conflict)
// is UNAVAILABLE to the client: retry, as for a server that is starting. It used to surface as
// INTERNAL_SERVER_ERROR ("the server broke"), which R1 (test/faults/r1-concurrent-sources.fault.ts)
// met for 2–25 % of 1,000 writes in flight over two instances.
import { GraphQLError } from 'graphql'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { connectDatabase, isDatabaseSaturated, POSTGRES_POOL_SIZE, type Db } from '../../src/store/db.ts'
import { DATABASE_BUSY_MESSAGE, socketErrors, toClientError, UNEXPECTED_ERROR_MESSAGE } from '../../src/server/error-codes.ts'
import { Prisma } from '../../src/generated/postgres/client.ts'

/** As a resolver's failure reaches the error formatting: wrapped by graphql-js with the field's path. */
const fromResolver = (error: Error) => new GraphQLError(error.message, { path: ['updateTask'], originalError: error })

describe('a saturated database is UNAVAILABLE, other database failures stay INTERNAL_SERVER_ERROR (postgres)', () => {
  let db: Db
  let url: string

  beforeAll(async () => {
    url = await migratedDatabase('postgres')
    db = await connectDatabase('postgres', url)
  })
  afterAll(() => db?.$disconnect())

  it('a transaction that cannot get a connection in time (P2028, from the real pool) is answered UNAVAILABLE on both transports, revealing nothing', async () => {
    // Every connection of the pool busy in a transaction for a moment; one more transaction cannot start.
    const busy = Array.from({ length: POSTGRES_POOL_SIZE }, () => db.$transaction((tx) => tx.$executeRaw`SELECT pg_sleep(1)`))
    const refused = await db.$transaction(async () => undefined, { maxWait: 50 }).then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    )
    await Promise.all(busy)
    expect(refused?.code).toBe('P2028')
    expect(isDatabaseSaturated(refused)).toBe(true)

    const http = toClientError(fromResolver(refused!), 'http')
    expect(http.message).toBe(DATABASE_BUSY_MESSAGE)
    expect(http.extensions).toEqual({ code: 'UNAVAILABLE' })
    expect(http.path).toEqual(['updateTask'])
    const [ws] = socketErrors([fromResolver(refused!)], () => undefined)
    expect(ws).toMatchObject({ message: DATABASE_BUSY_MESSAGE, extensions: { code: 'UNAVAILABLE' } })
    expect(JSON.stringify(ws)).not.toMatch(/P2028|Transaction API|prisma/i)
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
      expect(toClientError(fromResolver(timedOut!))).toMatchObject({ message: DATABASE_BUSY_MESSAGE, extensions: { code: 'UNAVAILABLE' } })
    } finally {
      await pool.end()
    }
  })

  it('write conflicts, pool timeouts and the connection limit are UNAVAILABLE too; a constraint violation is not', async () => {
    const known = (code: string) => new Prisma.PrismaClientKnownRequestError('database said no', { code, clientVersion: Prisma.prismaVersion.client })
    for (const code of ['P2024', 'P2034', 'P2037']) expect(toClientError(fromResolver(known(code))).extensions.code, code).toBe('UNAVAILABLE')
    // A real failure that retrying would not cure: a unique violation outside any handled path.
    const duplicate = await db.$executeRawUnsafe('CREATE TEMP TABLE t (id int primary key); INSERT INTO t VALUES (1), (1)').then(
      () => undefined,
      (error: unknown) => error as Error,
    )
    expect(duplicate).toBeDefined()
    expect(isDatabaseSaturated(duplicate)).toBe(false)
    expect(toClientError(fromResolver(duplicate!))).toMatchObject({ message: UNEXPECTED_ERROR_MESSAGE, extensions: { code: 'INTERNAL_SERVER_ERROR' } })
    expect(toClientError(fromResolver(new Error('P2028')))).toMatchObject({ extensions: { code: 'INTERNAL_SERVER_ERROR' } })
  })
})
