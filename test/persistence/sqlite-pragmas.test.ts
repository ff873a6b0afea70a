// The embedded server's SQLite connection: better-sqlite3 runs every statement on the main thread,
// so what a commit waits for there is time no request is answered (bench P10).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { connectDatabase, type Db } from '../../src/store/db.ts'

describe('SQLite connection settings', () => {
  let db: Db
  beforeAll(async () => (db = await connectDatabase('sqlite', await migratedDatabase('sqlite'))))
  afterAll(() => db?.$disconnect())

  const pragma = async (name: string) => Object.values((await db.$queryRawUnsafe<Record<string, unknown>[]>(`PRAGMA ${name}`))[0]!)[0]

  it('WAL with synchronous = NORMAL: a commit does not wait for an fsync (checkpoints still sync)', async () => {
    expect(await pragma('journal_mode')).toBe('wal')
    // 0 OFF, 1 NORMAL, 2 FULL (SQLite's default), 3 EXTRA.
    expect(Number(await pragma('synchronous'))).toBe(1)
    expect(Number(await pragma('foreign_keys'))).toBe(1)
  })
})
