import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'

/** A throwaway PostgreSQL cluster from the system's binaries: temp dir, free port, loopback only. */
export interface PostgresCluster {
  port: number
  url(database: string): string
  query(sql: string): Promise<void>
  /**
   * Stops the server and keeps its data directory and port, for an outage: `fast` (pg_ctl's
   * default for a deploy or a failover) ends every session with 57P01 admin_shutdown, `immediate`
   * drops them as a crash does. `start` brings the same cluster back on the same port.
   */
  shutDown(mode?: 'fast' | 'immediate'): void
  start(): void
  /** Stops the server for good and deletes its files. */
  stop(): void
}

function postgresBinDir(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  for (const v of versions) if (existsSync(path.join(root, v, 'bin', 'initdb'))) return path.join(root, v, 'bin')
  throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)')
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = postgresBinDir()
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-pg-'))
  chmodSync(dir, 0o777)
  // initdb refuses to run as root: run the server as the postgres user when we are root.
  const asUser = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : []
  const run = (cmd: string, args: string[]) => {
    const [file, ...rest] = [...asUser, path.join(bin, cmd), ...args]
    const result = spawnSync(file!, rest, { encoding: 'utf8' })
    if (result.status !== 0) throw new Error(`${cmd} failed: ${result.stderr || result.stdout}`)
  }
  const port = await freePort()
  run('initdb', ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync'])
  const start = () =>
    run('pg_ctl', [
      '-D',
      path.join(dir, 'data'),
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`,
      '-l',
      path.join(dir, 'log'),
      '-w',
      'start',
    ])
  start()
  const url = (database: string) => `postgresql://postgres@127.0.0.1:${port}/${database}`
  return {
    port,
    url,
    async query(sql) {
      const client = new pg.Client({ connectionString: url('postgres') })
      await client.connect()
      try {
        await client.query(sql)
      } finally {
        await client.end()
      }
    },
    shutDown(mode = 'fast') {
      run('pg_ctl', ['-D', path.join(dir, 'data'), '-m', mode, '-w', 'stop'])
    },
    start,
    stop() {
      try {
        const [file, ...rest] = [...asUser, path.join(bin, 'pg_ctl'), '-D', path.join(dir, 'data'), '-m', 'immediate', 'stop']
        execFileSync(file!, rest, { stdio: 'ignore' })
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  }
}
