import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { migratedDatabase, postgresUrl, tempDir } from '../support/databases.ts'
import { freePort } from '../support/postgres-cluster.ts'
import { projectRoot, spawnServer, type ServerProcess } from '../support/process.ts'
import { lockSqliteDatabase, probePostgres, probeRedis, StartupError } from '../../src/server/preflight.ts'

const children: ChildProcess[] = []
const servers: Server[] = []
const sockets: Socket[] = []
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  for (const socket of sockets) socket.destroy()
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
})

const start = (env: Record<string, string>) => spawnServer(['--import', 'tsx', 'src/main.ts'], env, children)

/** A listener on a free loopback port that accepts connections and never says a word. */
async function silentServer(): Promise<number> {
  const server = createServer((socket) => void sockets.push(socket))
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as { port: number }).port
}

/**
 * What every refused start must look like: exit 1, one line on stderr naming the variable, no
 * stack frame, no admin token, and no log line (nothing was started that could log).
 */
async function expectOneClearLine(run: ServerProcess, variable: string): Promise<string> {
  expect(await run.exited).toBe(1)
  const { stdout, stderr } = run.output()
  const lines = stderr.trimEnd().split('\n')
  expect(lines, stderr).toHaveLength(1)
  expect(lines[0]).toMatch(new RegExp(`^Cannot start: ${variable}: `))
  expect(stderr).not.toMatch(/\n\s+at |wasm|Error:/)
  expect(stderr).not.toMatch(/Admin token|tss_[\w-]{43}/)
  expect(stdout).toBe('')
  return lines[0]!
}

describe('a start that cannot succeed ends with one clear line and exit 1', () => {
  it('a port in use: named, and nothing is written (no database file, no token)', async () => {
    const port = await silentServer()
    const dir = path.join(tempDir('port-clash'), 'fresh')
    const run = start({ PORT: String(port), DATABASE_URL: `file:${path.join(dir, 'app.db')}` })
    const line = await expectOneClearLine(run, 'PORT')
    expect(line).toContain(`port ${port} on 127.0.0.1 is already in use`)
    expect(existsSync(dir)).toBe(false)
  })

  it('a second server on the same SQLite file is refused before it migrates; the first keeps serving', async () => {
    const databaseUrl = await migratedDatabase('sqlite')
    const dir = path.dirname(databaseUrl.slice('file:'.length))
    const adminToken = 'sqlite-twice-admin-token-0123456789'
    const [firstPort, secondPort] = await Promise.all([freePort(), freePort()])
    const first = start({ PORT: String(firstPort), DATABASE_URL: databaseUrl, ADMIN_TOKEN: adminToken })
    await first.ready(firstPort)
    const files = readdirSync(dir).sort()

    const second = start({ PORT: String(secondPort), DATABASE_URL: databaseUrl })
    const line = await expectOneClearLine(second, 'DATABASE_URL')
    expect(line).toContain(`another server process is already using the SQLite database ${path.join(dir, 'app.db')}`)
    expect(line).toContain('PostgreSQL')
    expect(readdirSync(dir).sort()).toEqual(files)
    const viewer = await fetch(`http://127.0.0.1:${firstPort}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ query: '{ viewer { user { name } } }' }),
    })
    expect(await viewer.json()).toEqual({ data: { viewer: { user: { name: 'admin' } } } })
  })

  it('an unreachable REDIS_URL: named, and the SQLite database is not created', async () => {
    const port = await freePort()
    const dir = path.join(tempDir('redis-down'), 'fresh')
    const run = start({ PORT: String(await freePort()), DATABASE_URL: `file:${path.join(dir, 'app.db')}`, REDIS_URL: `redis://127.0.0.1:${port}` })
    const line = await expectOneClearLine(run, 'REDIS_URL')
    expect(line).toContain(`Redis at 127.0.0.1:${port} is not reachable (ECONNREFUSED)`)
    expect(existsSync(dir)).toBe(false)
  })
})

describe('the SQLite lock', () => {
  it('is held across processes and dies with its holder, however it dies (no stale lock to clean up)', async () => {
    const databaseUrl = `file:${path.join(tempDir('sqlite-lock'), 'app.db')}`
    const holderScript = `import(${JSON.stringify(new URL('../../src/server/preflight.ts', import.meta.url).href)})
      .then((m) => m.lockSqliteDatabase(${JSON.stringify(databaseUrl)}))
      .then(() => new Promise((resolve) => setTimeout(resolve, 0)))
      // The holder keeps no reference to the release function: collecting garbage must not free the lock.
      .then(() => { globalThis.gc(); return new Promise((resolve) => setTimeout(resolve, 50)) })
      .then(() => { globalThis.gc(); console.log('locked'); setInterval(() => {}, 1 << 30) })`
    const holder = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', holderScript], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] })
    children.push(holder)
    await new Promise<void>((resolve) => holder.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve()))
    await expect(lockSqliteDatabase(databaseUrl)).rejects.toThrow(/another server process is already using the SQLite database/)
    holder.kill('SIGKILL')
    await new Promise((resolve) => holder.once('exit', resolve))
    const release = await lockSqliteDatabase(databaseUrl)
    await release()
  })
})

describe('service probes', () => {
  it('a PostgreSQL database that does not exist', async () => {
    await expect(probePostgres(postgresUrl('tss_no_such_database'))).rejects.toThrow(
      /^DATABASE_URL: PostgreSQL at 127\.0\.0\.1:\d+\/tss_no_such_database has no such database\. Create the database first/,
    )
  })


  it('give up on a PostgreSQL address that accepts connections but never answers', async () => {
    const port = await silentServer()
    const probe = probePostgres(`postgresql://postgres@127.0.0.1:${port}/tasks`, 200)
    await expect(probe).rejects.toThrow(StartupError)
    await expect(probe).rejects.toThrow(`DATABASE_URL: PostgreSQL at 127.0.0.1:${port}/tasks is not reachable (no answer within 200 ms)`)
  })

  it('give up on a Redis address that accepts connections but never answers', async () => {
    const port = await silentServer()
    const probe = probeRedis(`redis://127.0.0.1:${port}`, 200)
    await expect(probe).rejects.toThrow(StartupError)
    await expect(probe).rejects.toThrow(`REDIS_URL: Redis at 127.0.0.1:${port} is not reachable (no answer within 200 ms)`)
  })
})
