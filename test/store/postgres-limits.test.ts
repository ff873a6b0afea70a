// The fence that reaches the database (issue 44, item 1): every PostgreSQL connection of an
// instance runs with time limits derived from its lease (src/store/postgres-limits.ts), so a
// transaction a stalled holder left open loses its locks well inside the lease, and a statement
// never waits on such a lock for long. What those limits cost a healthy instance is answered
// UNAVAILABLE (retry), never INTERNAL_SERVER_ERROR. Real PostgreSQL; a stalled holder is a
// transaction whose next statement never comes.
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { connectDatabase, isDatabaseSaturated, isDatabaseUnavailable, isDatabaseUnreachable, type Db } from '../../src/store/db.ts'
import { postgresLimits } from '../../src/store/postgres-limits.ts'

/** Short, so the limits act within a test: a quarter of it is 500 ms. */
const LEASE_MS = 2000
const { idle_in_transaction_session_timeout: IDLE_MS, lock_timeout: LOCK_MS } = postgresLimits(LEASE_MS)

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as Error,
  )

describe('PostgreSQL time limits per connection (postgres)', () => {
  let url: string
  let db: Db
  let admin: pg.Client
  let workspaceId: string

  beforeAll(async () => {
    url = await migratedDatabase('postgres')
    db = await connectDatabase('postgres', url, { leaseMs: LEASE_MS })
    admin = new pg.Client({ connectionString: url })
    await admin.connect()
    workspaceId = (await db.workspace.create({ data: { name: 'limits', createdAt: new Date() } })).id
  })
  afterAll(async () => {
    await admin?.end()
    await db?.$disconnect()
  })

  it('are a quarter of the lease: released long before the lease of a stalled holder can expire', () => {
    expect(postgresLimits(10_000)).toEqual({ idle_in_transaction_session_timeout: 2500, lock_timeout: 2500 })
    expect(postgresLimits(300)).toEqual({ idle_in_transaction_session_timeout: 75, lock_timeout: 75 })
  })

  it('every connection of the pool runs with them', async () => {
    const shown = await db.$transaction(async (tx) => {
      const idle = await tx.$queryRawUnsafe<{ v: string }[]>(`SELECT current_setting('idle_in_transaction_session_timeout') AS v`)
      const lock = await tx.$queryRawUnsafe<{ v: string }[]>(`SELECT current_setting('lock_timeout') AS v`)
      return [idle[0]!.v, lock[0]!.v]
    })
    expect(shown).toEqual([`${IDLE_MS}ms`, `${LOCK_MS}ms`])
  })

  it('a transaction left open by a stalled holder is ended, and its row lock released, within the idle limit', async () => {
    let resume!: () => void
    const stalled = new Promise<void>((resolve) => (resume = resolve))
    // The holder writes the row, then stalls: its next statement comes only once resumed.
    const holder = failure(
      db.$transaction(
        async (tx) => {
          await tx.workspace.update({ where: { id: workspaceId }, data: { name: 'held' } })
          await stalled
          await tx.workspace.update({ where: { id: workspaceId }, data: { name: 'stale' } })
        },
        { timeout: 60_000 },
      ),
    )
    await expectHeld()
    const startedAt = performance.now()
    // Another connection (as another instance's takeover) writes the same row: it waits no longer than the stall's limit.
    await admin.query(`UPDATE "Workspace" SET "name" = 'taken' WHERE "id" = $1`, [workspaceId])
    const waitedMs = performance.now() - startedAt
    expect(waitedMs).toBeLessThan(IDLE_MS + 1000)
    resume()
    const error = await holder
    // The holder learns its transaction is gone: answered UNAVAILABLE, and nothing of it landed.
    expect(error, 'the stale transaction failed').toBeInstanceOf(Error)
    expect(isDatabaseUnavailable(error), `${error?.name}: ${error?.message}`).toBe(true)
    expect((await db.workspace.findUniqueOrThrow({ where: { id: workspaceId } })).name).toBe('taken')
    // The pool serves on.
    expect(await db.workspace.count({ where: { id: workspaceId } })).toBe(1)
  })

  it('a statement waits for a lock no longer than the lock limit, and the failure is saturation (UNAVAILABLE), not a broken server', async () => {
    await admin.query('BEGIN')
    try {
      await admin.query(`UPDATE "Workspace" SET "name" = 'locked' WHERE "id" = $1`, [workspaceId])
      const startedAt = performance.now()
      const errors = [
        await failure(db.workspace.update({ where: { id: workspaceId }, data: { name: 'model' } })),
        await failure(db.workspace.updateMany({ where: { id: workspaceId }, data: { name: 'many' } })),
        await failure(db.$executeRaw`UPDATE "Workspace" SET "name" = 'raw' WHERE "id" = ${workspaceId}`),
        await failure(db.$transaction(async (tx) => tx.workspace.update({ where: { id: workspaceId }, data: { name: 'interactive' } }))),
      ]
      expect(performance.now() - startedAt).toBeLessThan(4 * (LOCK_MS + 1000))
      for (const error of errors) {
        expect(error, 'the write failed').toBeInstanceOf(Error)
        expect(isDatabaseSaturated(error), `${error?.name}: ${error?.message}`).toBe(true)
        expect(isDatabaseUnreachable(error)).toBe(false)
      }
    } finally {
      await admin.query('ROLLBACK')
    }
    expect((await db.workspace.findUniqueOrThrow({ where: { id: workspaceId } })).name).toBe('taken')
  })

  it('a statement cut by a statement_timeout (an operator’s, on the role or database) is saturation too', async () => {
    const error = await failure(
      db.$transaction(async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = 50`)
        await tx.$executeRawUnsafe('SELECT pg_sleep(1)')
      }),
    )
    expect(error, 'the statement failed').toBeInstanceOf(Error)
    expect(isDatabaseSaturated(error), `${error?.name}: ${error?.message}`).toBe(true)
  })

  it('the server ending an idle transaction (25P03), as the driver adapter passes it on, is saturation, not an unreachable database', () => {
    const cause = { kind: 'postgres', originalCode: '25P03', code: '25P03', severity: 'FATAL', message: 'terminating connection due to idle-in-transaction timeout' }
    const adapterError = Object.assign(new Error(cause.message), { name: 'DriverAdapterError', cause })
    const raw = Object.assign(new Error('Raw query failed'), { name: 'PrismaClientKnownRequestError', code: 'P2010', meta: { driverAdapterError: adapterError } })
    const fromPg = Object.assign(new Error(cause.message), { code: '25P03', severity: 'FATAL' })
    for (const error of [adapterError, raw, fromPg]) {
      expect(isDatabaseSaturated(error), error.name).toBe(true)
      expect(isDatabaseUnreachable(error), error.name).toBe(false)
    }
  })

  it('a transaction that outlives its timeout after the server ended its connection is rolled back without ending the process', async () => {
    // Prisma rolls it back from a timer that nothing awaits: a failed ROLLBACK there was an unhandled rejection (the run fails on one).
    const error = await failure(
      db.$transaction(
        async (tx) => {
          await tx.workspace.update({ where: { id: workspaceId }, data: { name: 'stalled' } })
          await new Promise((r) => setTimeout(r, IDLE_MS + 700))
          await tx.workspace.update({ where: { id: workspaceId }, data: { name: 'stale' } })
        },
        { timeout: IDLE_MS + 300 },
      ),
    )
    expect(error, 'the stale transaction failed').toBeInstanceOf(Error)
    expect((await db.workspace.findUniqueOrThrow({ where: { id: workspaceId } })).name).not.toMatch(/stalled|stale/)
  })

  /** The holder's write is in: the row is locked (another connection's NOWAIT lock fails). */
  async function expectHeld() {
    const deadline = Date.now() + 5000
    for (;;) {
      const locked = await admin.query(`SELECT 1 FROM "Workspace" WHERE "id" = $1 FOR UPDATE NOWAIT`, [workspaceId]).then(
        () => false,
        () => true,
      )
      if (locked) return
      if (Date.now() > deadline) throw new Error('the holder never locked the row')
      await new Promise((r) => setTimeout(r, 10))
    }
  }
})
