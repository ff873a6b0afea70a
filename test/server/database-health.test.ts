// /readyz asks DatabaseHealth whether the database can be reached: a flood of probes costs one
// `SELECT 1` per cache period, an operation that met an unreachable database turns it down at
// once, and the next probe that gets an answer turns it up again. (A real outage:
// test/server/database-outage.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { connectDatabase, type Db } from '../../src/store/db.ts'
import { DatabaseHealth } from '../../src/server/database-health.ts'
import { PrismaBetterSQLite3 } from '@prisma/adapter-better-sqlite3'

describe('DatabaseHealth (sqlite)', () => {
  let db: Db
  const probes: string[] = []

  beforeAll(async () => {
    db = await connectDatabase('sqlite', await migratedDatabase('sqlite'), { onQuery: (sql) => void (sql === 'SELECT 1' && probes.push(sql)) })
  })
  afterAll(() => db?.$disconnect())

  it('probes at most once per period, however many ask; down when told, up again at the next answered probe', async () => {
    let now = 0
    const health = new DatabaseHealth(db, { cacheMs: 1000, now: () => now })
    expect(await Promise.all(Array.from({ length: 50 }, () => health.check()))).toEqual(Array(50).fill(true))
    expect(probes).toHaveLength(1)
    now = 999
    expect(await health.check()).toBe(true)
    expect(probes).toHaveLength(1)

    health.markUnreachable()
    expect(health.reachable).toBe(false)
    expect(await Promise.all([health.check(), health.check()])).toEqual([false, false])
    expect(probes).toHaveLength(1)
    now += 1000
    expect(await health.check()).toBe(true)
    expect(probes).toHaveLength(2)
    expect(health.reachable).toBe(true)
  })

  it('refused writes: down at once, up again only when a probe’s own write commits', async () => {
    let now = 0
    const health = new DatabaseHealth(db, { cacheMs: 1000, now: () => now })
    const file = (await db.$queryRawUnsafe<{ file: string }[]>("SELECT file FROM pragma_database_list WHERE name = 'main'"))[0]!.file
    // Another connection to the file, as another process would hold one.
    const other = await new PrismaBetterSQLite3({ url: `file:${file}`, timeout: 0 }).connect()
    const exec = (sql: string) => other.executeRaw({ sql, args: [], argTypes: [] })
    try {
      health.markWritesRefused()
      expect(await health.check()).toBe(false)
      expect(health.waitingFor).toEqual(['database writes'])
      // Another process holds the write lock: the probe's write is refused too.
      await exec('BEGIN IMMEDIATE')
      now += 1000
      expect(await health.check()).toBe(false)
      await exec('ROLLBACK')
      now += 999
      expect(await health.check()).toBe(false)
      now += 1
      expect(await health.check()).toBe(true)
      expect(health.waitingFor).toEqual([])
    } finally {
      await other.dispose()
    }
  })
})
