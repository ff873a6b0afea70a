// /readyz asks DatabaseHealth whether the database can be reached: a flood of probes costs one
// `SELECT 1` per cache period, an operation that met an unreachable database turns it down at
// once, and the next probe that gets an answer turns it up again. (A real outage:
// test/server/database-outage.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { connectDatabase, type Db } from '../../src/store/db.ts'
import { DatabaseHealth } from '../../src/server/database-health.ts'

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
})
