import { describe, expect, it } from 'vitest'
import { PROVIDERS, migratedDatabase } from '../support/databases.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { bootstrapAdmin, principalForToken } from '../../src/store/users.ts'

describe.each(PROVIDERS)('admin bootstrap (%s)', (provider) => {
  // Each connection stands for one instance starting at the same moment on one empty database.
  // SQLite connections in one process would block each other's event loop (better-sqlite3 waits
  // synchronously on a lock), so there the instances share one connection and race by interleaving.
  async function instances(count: number) {
    const url = await migratedDatabase(provider)
    if (provider === 'sqlite') {
      const db = await connectDatabase(provider, url)
      return Array.from({ length: count }, () => db)
    }
    return Promise.all(Array.from({ length: count }, () => connectDatabase(provider, url)))
  }

  it('instances starting together on an empty database create one admin and print one token', async () => {
    const dbs = await instances(4)
    try {
      const results = await Promise.all(dbs.map((db) => bootstrapAdmin(db, undefined)))
      expect(await dbs[0]!.user.count({ where: { isAdmin: true } })).toBe(1)
      const tokens = results.flatMap((r) => (r.generatedToken ? [r.generatedToken] : []))
      expect(tokens).toHaveLength(1)
      expect(new Set(results.map((r) => r.adminUserId)).size).toBe(1)
      expect(await principalForToken(dbs[1]!, tokens[0]!)).toEqual({ userId: results[0]!.adminUserId, isAdmin: true })
      // A restart prints nothing.
      expect((await bootstrapAdmin(dbs[2]!, undefined)).generatedToken).toBeUndefined()
    } finally {
      await Promise.all([...new Set(dbs)].map((db) => db.$disconnect()))
    }
  })

  it('with ADMIN_TOKEN, instances starting together create one admin that the token authenticates', async () => {
    const dbs = await instances(4)
    const token = 'admin-token-0123456789abcdef'
    try {
      const results = await Promise.all(dbs.map((db) => bootstrapAdmin(db, token)))
      expect(results.every((r) => r.generatedToken === undefined)).toBe(true)
      expect(await dbs[0]!.user.count({ where: { isAdmin: true } })).toBe(1)
      expect(await dbs[0]!.apiToken.count()).toBe(1)
      expect((await principalForToken(dbs[3]!, token))?.isAdmin).toBe(true)
    } finally {
      await Promise.all([...new Set(dbs)].map((db) => db.$disconnect()))
    }
  })
})
