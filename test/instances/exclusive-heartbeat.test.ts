// The embedded server's heartbeat (SQLite, exclusive): renewed every half lease, since no fence
// depends on it (src/instances/lease-timing.ts), and looking for expired instances only while
// another instance has a row. Alone on the file, only processes that ran on it earlier can have
// left one; once a pass has taken and forgotten them, no later pass could find anything.
import { afterEach, describe, expect, it } from 'vitest'
import { registerInstance } from '../../src/store/instances.ts'
import { startTestServer, type TestServer } from '../support/server.ts'

describe('the embedded server’s heartbeat (sqlite)', () => {
  let server: TestServer
  afterEach(() => server?.close())

  it('renews every half lease and stops looking for expired instances once it is the only one', async () => {
    const statements: string[] = []
    // With onQuery the lease is an hour (test/support/server.ts): heartbeats run here by hand.
    server = await startTestServer('sqlite', { onQuery: (sql) => statements.push(sql) })
    expect(server.lease.intervalMs).toBe(1_800_000)
    const instanceReads = () => statements.filter((sql) => /^\s*SELECT/i.test(sql) && sql.includes('ServerInstance')).length

    // A row an earlier process left, its lease not yet run out: each heartbeat still looks.
    await registerInstance(server.store, 'earlier', 200)
    await server.lease.tick()
    const afterFirst = instanceReads()
    expect(afterFirst).toBeGreaterThan(0)
    expect(await server.store.db.serverInstance.count({ where: { id: 'earlier' } })).toBe(1)

    // Expired: the next pass forgets it (it owns nothing), and finds no other instance left.
    await new Promise((resolve) => setTimeout(resolve, 250))
    await server.lease.tick()
    expect(instanceReads()).toBeGreaterThan(afterFirst)
    expect(await server.store.db.serverInstance.count({ where: { id: 'earlier' } })).toBe(0)

    // From then on a heartbeat is its renewal alone.
    const before = statements.length
    const reads = instanceReads()
    await server.lease.tick()
    expect(instanceReads()).toBe(reads)
    expect(statements.slice(before).some((sql) => /^\s*UPDATE/i.test(sql) && sql.includes('ServerInstance'))).toBe(true)
  })
})
