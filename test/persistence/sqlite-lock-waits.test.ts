// The embedded database's adapter (src/store/sqlite-adapter.ts) against a real file and a second
// real connection holding its write lock: it waits between attempts (here an injected clock and
// pause, no real time), never inside SQLite's busy handler; it gives up busy once its budget is
// spent; and a COMMIT that fails leaves neither an open transaction nor a held mutex behind.
import path from 'node:path'
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { LockAwareSqliteAdapter, sqliteCodeOf, type LockWaitOptions } from '../../src/store/sqlite-adapter.ts'
import { connectDatabase, isDatabaseRefusingWrites, isDatabaseUnavailable, type Db } from '../../src/store/db.ts'
import { migratedDatabase, tempDir } from '../support/databases.ts'
import { withinDeadline } from '../../src/util/deadline.ts'

const query = (sql: string) => ({ sql, args: [], argTypes: [] })
const closers: (() => unknown)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

/** A file with one table, the adapter on it (busy timeout 0, as the server opens it), and another connection. */
async function fileWithTwoConnections(pauses: (ms: number) => void, options: Partial<LockWaitOptions> = {}) {
  const file = path.join(tempDir('sqlite-lock'), 'app.db')
  // Another connection, as another process would hold one (no busy timeout: its refused write below answers at once).
  const otherConnection = await new PrismaBetterSQLite3({ url: `file:${file}`, timeout: 0 }).connect()
  closers.push(() => otherConnection.dispose())
  // Prisma's adapter runs each statement synchronously before it returns its promise.
  const other = {
    exec: (sql: string) => void otherConnection.executeRaw(query(sql)),
    write: (sql: string) => otherConnection.executeRaw(query(sql)),
    rows: async (sql: string) => (await otherConnection.queryRaw(query(sql))).rows,
  }
  await other.write('PRAGMA journal_mode = WAL')
  other.exec('CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)')
  let now = 0
  const inner = await new PrismaBetterSQLite3({ url: `file:${file}`, timeout: 0 }).connect()
  const adapter = new LockAwareSqliteAdapter(inner, {
    budgetMs: 500,
    delaysMs: [10, 20, 40, 100],
    now: () => now,
    sleep: async (ms) => {
      now += ms
      pauses(ms)
    },
    ...options,
  })
  closers.push(() => adapter.dispose())
  return { adapter, other }
}

describe('the SQLite adapter waits out another process’s lock off the event loop', () => {
  it('retries a write after pauses while the lock is held, and it lands once the lock is released', async () => {
    const pauses: number[] = []
    const { adapter, other } = await fileWithTwoConnections((ms) => {
      pauses.push(ms)
      if (pauses.length === 3) other.exec('ROLLBACK')
    })
    other.exec('BEGIN IMMEDIATE')
    expect(await adapter.executeRaw(query(`INSERT INTO item (name) VALUES ('x')`))).toBe(1)
    expect(pauses).toEqual([10, 20, 40])
    expect(await other.rows('SELECT name FROM item')).toEqual([['x']])
  })

  it('gives up busy once its budget is spent, having paused no longer than the budget', async () => {
    const pauses: number[] = []
    const { adapter, other } = await fileWithTwoConnections((ms) => pauses.push(ms))
    other.exec('BEGIN IMMEDIATE')
    const error = await adapter.executeRaw(query(`INSERT INTO item (name) VALUES ('x')`)).catch((e: unknown) => e)
    expect(sqliteCodeOf(error)).toBe('SQLITE_BUSY')
    expect(pauses).toEqual([10, 20, 40, 100, 100, 100, 100, 30])
    other.exec('ROLLBACK')
  })

  it('takes the write lock when a transaction begins, waiting for it there, and never holds the mutex while it waits', async () => {
    const pauses: number[] = []
    let during: Promise<unknown> | undefined
    const { adapter, other } = await fileWithTwoConnections((ms) => {
      pauses.push(ms)
      // While the first transaction waits for the lock, a second one may try too (it is not queued behind a held mutex).
      during ??= adapter.startTransaction().then(async (tx) => {
        await tx.executeRaw(query('ROLLBACK'))
        await tx.rollback()
      })
      if (pauses.length === 2) other.exec('ROLLBACK')
    })
    other.exec('BEGIN IMMEDIATE')
    const tx = await adapter.startTransaction()
    // Held from BEGIN: the other connection cannot write now.
    await expect(other.write(`INSERT INTO item (name) VALUES ('other')`)).rejects.toMatchObject({ cause: { originalCode: 'SQLITE_BUSY' } })
    await tx.executeRaw(query(`INSERT INTO item (name) VALUES ('mine')`))
    await tx.executeRaw(query('COMMIT'))
    await tx.commit()
    await during
    expect(pauses.length).toBeGreaterThanOrEqual(2)
    expect(await other.rows('SELECT name FROM item')).toEqual([['mine']])
  })
})

describe('a ROLLBACK on a transaction SQLite already ended', () => {
  it('resolves (Prisma may send it from a timer nobody awaits) and releases the transaction', async () => {
    const { adapter } = await fileWithTwoConnections(() => undefined)
    const tx = await adapter.startTransaction()
    // The transaction ends inside, as SQLite ends it by itself after a full disk; Prisma's ROLLBACK then finds nothing open.
    await tx.executeRaw(query('ROLLBACK'))
    expect(await tx.executeRaw(query('ROLLBACK'))).toBe(0)
    const next = await withinDeadline(1_000, adapter.startTransaction())
    await next.executeRaw(query('ROLLBACK'))
    await next.rollback()
  })
})

describe('through Prisma, on the one connection every request shares', () => {
  let db!: Db
  beforeEach(async () => {
    db = await connectDatabase('sqlite', await migratedDatabase('sqlite'))
  })
  afterEach(() => db.$disconnect())

  it('rolls back what SQLite left open and frees the connection for the next transaction', async () => {
    // A deferred foreign key fails at COMMIT and SQLite leaves the transaction open: Prisma's own
    // adapter kept its mutex then, and every later transaction waited for good.
    await db.$executeRawUnsafe('CREATE TABLE parent (id INTEGER PRIMARY KEY)')
    await db.$executeRawUnsafe('CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)')
    const failed = await db.$transaction((tx) => tx.$executeRawUnsafe('INSERT INTO child (parent) VALUES (42)')).catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(Error)
    await withinDeadline(
      5_000,
      db.$transaction(async (tx) => {
        await tx.$executeRawUnsafe('INSERT INTO parent (id) VALUES (1)')
        await tx.$executeRawUnsafe('INSERT INTO child (parent) VALUES (1)')
      }),
    )
    expect(await db.$queryRawUnsafe('SELECT parent FROM child')).toEqual([{ parent: 1 }])
  })

  it('lets the transaction’s own error through and frees the connection for the next transaction', async () => {
    await db.$executeRawUnsafe('CREATE TABLE item (id INTEGER PRIMARY KEY)')
    // As SQLite does by itself after a full disk or an I/O error: the transaction is gone before Prisma's ROLLBACK.
    const failed = await db
      .$transaction(async (tx) => {
        await tx.$executeRawUnsafe('INSERT INTO item (id) VALUES (1)')
        await tx.$executeRawUnsafe('ROLLBACK')
        throw new Error('the write failed')
      })
      .catch((e: unknown) => e)
    expect(failed).toMatchObject({ message: 'the write failed' })
    await withinDeadline(5_000, db.$transaction((tx) => tx.$executeRawUnsafe('INSERT INTO item (id) VALUES (2)')))
    expect(await db.$queryRawUnsafe('SELECT id FROM item')).toEqual([{ id: 2 }])
  })

  it('is not part of it: an acknowledged write survives the rollback of a transaction open at the same time', async () => {
    await db.$executeRawUnsafe('CREATE TABLE item (id INTEGER PRIMARY KEY)')
    let inside!: () => void
    const open = new Promise<void>((resolve) => (inside = resolve))
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    // One connection serves every request: a write another request makes while this transaction
    // awaits must not run inside it, or its rollback takes back a write already acknowledged.
    const rolledBack = db
      .$transaction(async (tx) => {
        await tx.$executeRawUnsafe('INSERT INTO item (id) VALUES (1)')
        inside()
        await held
        throw new Error('refused')
      })
      .catch((e: unknown) => e)
    await open
    const acknowledged = db.$executeRawUnsafe('INSERT INTO item (id) VALUES (2)')
    setTimeout(release, 50)
    expect(await acknowledged).toBe(1)
    expect(await rolledBack).toMatchObject({ message: 'refused' })
    expect(await db.$queryRawUnsafe('SELECT id FROM item')).toEqual([{ id: 2 }])
  })
})

describe('errors of a database that answers but takes no write', () => {
  it('are refused writes, answered UNAVAILABLE: a held lock, a full disk, an I/O error, PostgreSQL’s disk_full', () => {
    const sqlite = (code: string) => Object.assign(new Error('x'), { name: 'SqliteError', code })
    const viaPrisma = (originalCode: string, kind = 'SocketTimeout') =>
      Object.assign(new Error('x'), { name: 'PrismaClientKnownRequestError', code: 'P1008', meta: { driverAdapterError: { cause: { originalCode, kind } } } })
    const postgres = (sqlState: string) =>
      Object.assign(new Error('x'), { name: 'PrismaClientKnownRequestError', code: 'P2010', meta: { driverAdapterError: { cause: { originalCode: sqlState, kind: 'postgres' } } } })
    for (const error of [sqlite('SQLITE_FULL'), sqlite('SQLITE_IOERR_WRITE'), viaPrisma('SQLITE_BUSY'), viaPrisma('SQLITE_LOCKED', 'sqlite'), postgres('53100')]) {
      expect(isDatabaseRefusingWrites(error)).toBe(true)
      expect(isDatabaseUnavailable(error)).toBe(true)
    }
    for (const error of [sqlite('SQLITE_CONSTRAINT_UNIQUE'), postgres('23505'), new Error('SQLITE_FULL')]) expect(isDatabaseRefusingWrites(error)).toBe(false)
  })
})
