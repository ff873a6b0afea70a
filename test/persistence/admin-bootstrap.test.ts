import { Writable } from 'node:stream'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { PROVIDERS, migratedDatabase } from '../support/databases.ts'
import { errorCodes, http, wsClient } from '../support/client.ts'
import { startTestServer } from '../support/server.ts'
import { ViewerDocument } from '../generated/graphql.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { bootstrapAdmin, principalForToken } from '../../src/store/users.ts'
import { hashToken } from '../../src/auth/tokens.ts'

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
      expect(await principalForToken(dbs[1]!, tokens[0]!)).toEqual({ userId: results[0]!.adminUserId, isAdmin: true, tokenHash: hashToken(tokens[0]!) })
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

  it('ADMIN_TOKEN becomes the only admin token: it revokes the generated one and any earlier ADMIN_TOKEN; a start without it keeps the last', async () => {
    const url = await migratedDatabase(provider)
    const db = await connectDatabase(provider, url)
    try {
      const generated = (await bootstrapAdmin(db, undefined)).generatedToken!
      const first = 'first-admin-token-0123456789'
      const second = 'second-admin-token-0123456789'

      expect(await bootstrapAdmin(db, first)).toEqual({ adminUserId: 'admin', revokedTokens: 1 })
      expect(await principalForToken(db, generated)).toBeNull()
      expect(await principalForToken(db, first)).toEqual({ userId: 'admin', isAdmin: true, tokenHash: hashToken(first) })

      // Unsetting the variable must not lock the operator out, nor mint a second token.
      expect(await bootstrapAdmin(db, undefined)).toEqual({ adminUserId: 'admin' })
      expect(await principalForToken(db, first)).toEqual({ userId: 'admin', isAdmin: true, tokenHash: hashToken(first) })

      expect(await bootstrapAdmin(db, second)).toEqual({ adminUserId: 'admin', revokedTokens: 1 })
      expect(await principalForToken(db, first)).toBeNull()
      // A restart with the same ADMIN_TOKEN has nothing to revoke.
      expect(await bootstrapAdmin(db, second)).toEqual({ adminUserId: 'admin' })
      expect(await db.apiToken.count({ where: { userId: 'admin' } })).toBe(1)
    } finally {
      await db.$disconnect()
    }
  })
})

describe('ADMIN_TOKEN after a generated admin token, on a listening server (sqlite)', () => {
  it('the generated token is refused (UNAUTHENTICATED, WebSocket 4403), ADMIN_TOKEN works, the revocation is logged without either token', async () => {
    let generated = ''
    const first = await startTestServer('sqlite', { env: { ADMIN_TOKEN: '' }, onAdminTokenGenerated: (token) => (generated = token) })
    await first.close()
    expect(generated).toMatch(/^tss_/)

    let logs = ''
    const logger = pino({ level: 'info' }, new Writable({ write: (chunk, _, done) => ((logs += chunk.toString()), done()) }))
    const adminToken = 'operator-chosen-admin-token-0123456789'
    const second = await startTestServer('sqlite', { databaseUrl: first.databaseUrl, env: { ADMIN_TOKEN: adminToken }, logger })
    try {
      expect(errorCodes(await http(second.graphqlUrl, generated, ViewerDocument))).toEqual(['UNAUTHENTICATED'])
      await expect(wsClient(second.wsUrl, generated)).rejects.toMatchObject({ code: 4403 })
      expect((await http(second.graphqlUrl, adminToken, ViewerDocument)).data?.viewer.user.name).toBe('admin')
      const revocation = logs.split('\n').find((line) => line.includes('revoked'))
      expect(JSON.parse(revocation!)).toMatchObject({ level: 40, revokedTokens: 1 })
      expect(logs).not.toContain(generated)
      expect(logs).not.toContain(adminToken)
    } finally {
      await second.close()
    }

    // Started again without ADMIN_TOKEN: the last one stays the admin token and nothing is generated.
    let regenerated: string | undefined
    const third = await startTestServer('sqlite', { databaseUrl: first.databaseUrl, env: { ADMIN_TOKEN: '' }, onAdminTokenGenerated: (token) => (regenerated = token) })
    try {
      expect(regenerated).toBeUndefined()
      expect((await http(third.graphqlUrl, adminToken, ViewerDocument)).data?.viewer.user.name).toBe('admin')
    } finally {
      await third.close()
    }
  })
})
