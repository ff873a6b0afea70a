// Every DATABASE_URL that cannot work ends the start (and `npm run db:migrate`) the same way: one
// line on stderr naming DATABASE_URL, no stack, no password, nothing on stdout, exit 1, and all of
// it before a 5 s deadline. A hang (as Node's recursive mkdir under /proc once caused) fails the
// deadline instead of holding the run.
import type { ChildProcess } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { migratedDatabase, postgresUrl, tempDir } from '../support/databases.ts'
import { freePort } from '../support/postgres-cluster.ts'
import { spawnServer, type ServerProcess } from '../support/process.ts'
import { databaseStartupError } from '../../src/app/open-database.ts'
import { withoutCredentials } from '../../src/server/startup-error.ts'

const DEADLINE_MS = 5_000
const PASSWORD = 's3cret-pw'

const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
})

/**
 * Root may write wherever file modes forbid it (CAP_DAC_OVERRIDE): a test run by root runs the
 * server without that capability, as the owner of the files, to show what a server's own user
 * may not do. Nothing else changes (same uid, so it still reads the project).
 */
const unprivileged = process.getuid?.() === 0 ? ['setpriv', '--bounding-set', '-dac_override,-dac_read_search'] : []

interface Shape {
  name: string
  url: () => Promise<string> | string
  /** What the one line says, after `DATABASE_URL: `. */
  says: RegExp
  /** Refused when the environment is read (`Invalid configuration: …`), before anything is opened. */
  configuration?: true
  /** Run the server without root's power to write where file modes forbid it. */
  unprivileged?: boolean
  /** Checked after the refusal: nothing was changed. */
  unchanged?: () => void
}

let garbage: { file: string; content: string }
const SHAPES: Shape[] = [
  { name: 'empty', url: () => '', says: /^is empty; unset it for the default file:\.\/data\/app\.db/, configuration: true },
  { name: 'an unknown scheme', url: () => `mysql://app:${PASSWORD}@db.example.com/tasks`, says: /^the scheme mysql: is not supported; use file:/, configuration: true },
  { name: 'a malformed PostgreSQL URL', url: () => 'postgres://:@:x/', says: /^is not a valid PostgreSQL URL; write postgres:\/\/user:password@host:5432\/database/, configuration: true },
  { name: 'file: naming a folder with a slash', url: () => `file:${tempDir('slash')}/`, says: /^names a folder \(it ends with \/\)/, configuration: true },
  { name: 'file: naming an existing folder', url: () => `file:${tempDir('folder')}`, says: /^\/.+ is a folder, not a database file\. Name a file in it, such as file:\/.+\/app\.db\.$/ },
  {
    // Node's recursive mkdir spun here forever (procfs answers ENOENT to every new entry).
    name: 'file: in a folder that does not exist and cannot be created',
    url: () => 'file:/proc/nope/app.db',
    says: /^cannot create the folder \/proc\/nope for the SQLite database \(ENOENT\)/,
  },
  {
    name: 'file: naming a file that is not a SQLite database',
    url: () => {
      garbage = { file: path.join(tempDir('garbage'), 'app.db'), content: 'these bytes are not a SQLite database\n'.repeat(100) }
      writeFileSync(garbage.file, garbage.content)
      return `file:${garbage.file}`
    },
    says: /^\/.+\/app\.db is not a SQLite database\./,
    unchanged: () => expect(readFileSync(garbage.file, 'utf8')).toBe(garbage.content),
  },
  {
    name: 'file: in a read-only folder',
    url: () => {
      const dir = path.join(tempDir('read-only'), 'ro')
      mkdirSync(dir, { mode: 0o555 })
      return `file:${path.join(dir, 'app.db')}`
    },
    says: /^cannot create \/.+\/ro\/app\.db: the folder \/.+\/ro refuses new files from the server’s user \(EACCES\)/,
    unprivileged: true,
  },
  {
    name: 'file: naming a read-only database',
    url: async () => {
      const file = path.join(tempDir('read-only-db'), 'app.db')
      copyFileSync((await migratedDatabase('sqlite')).slice('file:'.length), file)
      chmodSync(file, 0o444)
      return `file:${file}`
    },
    says: /^\/.+\/app\.db is read-only for the server’s user \(EACCES\)/,
    unprivileged: true,
  },
  {
    name: 'postgres:// with a host that does not resolve',
    url: () => `postgresql://postgres:${PASSWORD}@no-such-host.invalid:5432/tasks`,
    says: /^PostgreSQL at no-such-host\.invalid:5432\/tasks is not reachable \((ENOTFOUND|EAI_AGAIN|no answer within \d+ ms)\)/,
  },
  {
    name: 'postgres:// on a port nothing listens on',
    url: async () => `postgresql://postgres:${PASSWORD}@127.0.0.1:${await freePort()}/tasks`,
    says: /^PostgreSQL at 127\.0\.0\.1:\d+\/tasks is not reachable \(ECONNREFUSED\)/,
  },
  {
    name: 'postgres:// with a user the server does not know',
    url: () => postgresUrl('postgres').replace('postgresql://postgres@', `postgresql://no_such_role:${PASSWORD}@`),
    says: /^PostgreSQL at 127\.0\.0\.1:\d+\/postgres refused the user or password/,
  },
  {
    name: 'postgres:// naming a database that does not exist',
    url: () => postgresUrl('tss_no_such_database').replace('postgresql://postgres@', `postgresql://postgres:${PASSWORD}@`),
    says: /^PostgreSQL at 127\.0\.0\.1:\d+\/tss_no_such_database has no such database/,
  },
]

/** Exit 1 before the deadline (counted from the spawn), with one clear line and nothing else. */
async function expectRefusal(run: ServerProcess, prefix: string, says: RegExp, deadlineMs = DEADLINE_MS): Promise<void> {
  const outcome = await Promise.race([run.exited, new Promise((resolve) => setTimeout(() => resolve(`still running after ${deadlineMs} ms`), deadlineMs))])
  const { stdout, stderr } = run.output()
  expect(outcome, stderr).toBe(1)
  const lines = stderr.trimEnd().split('\n')
  expect(lines, stderr).toHaveLength(1)
  const [head, rest] = [lines[0]!.slice(0, prefix.length), lines[0]!.slice(prefix.length)]
  expect(head).toBe(prefix)
  expect(rest).toMatch(says)
  expect(stderr).not.toMatch(/\n\s+at |Error:|prisma|invocation/i)
  expect(stderr).not.toContain(PASSWORD)
  expect(stdout).toBe('')
}

const prefixOf = (shape: Shape, command: 'start' | 'migrate') =>
  shape.configuration ? 'Invalid configuration: DATABASE_URL: ' : `Cannot ${command}: DATABASE_URL: `

describe('a DATABASE_URL that cannot work: one line, exit 1, within 5 s', () => {
  it.each(SHAPES)('npm start: $name', async (shape) => {
    const url = await shape.url()
    const [command, ...wrapper] = shape.unprivileged && unprivileged.length > 0 ? [...unprivileged, process.execPath] : []
    const run = spawnServer([...wrapper, '--import', 'tsx', 'src/main.ts'], { PORT: String(await freePort()), DATABASE_URL: url }, children, { command })
    await expectRefusal(run, prefixOf(shape, 'start'), shape.says)
    shape.unchanged?.()
  })

  it.each(SHAPES.filter((shape) => ['empty', 'file: in a folder that does not exist and cannot be created', 'postgres:// on a port nothing listens on'].includes(shape.name)))(
    'npm run db:migrate: $name',
    async (shape) => {
      const url = await shape.url()
      const run = spawnServer(['--import', 'tsx', 'scripts/migrate.ts'], { DATABASE_URL: url }, children)
      await expectRefusal(run, prefixOf(shape, 'migrate'), shape.says)
    },
  )
})

describe('a SQLite database SQLite itself refuses once the server opens it', () => {
  // The header is right, so the probe lets it pass; the refusal comes from opening the database,
  // after the rest of the server has been loaded (seconds more on a busy machine: a longer deadline).
  it('npm start: one line naming the file and SQLite\'s reason, exit 1', async () => {
    const file = path.join(tempDir('damaged'), 'app.db')
    const bytes = Buffer.alloc(8192, 'A')
    Buffer.from('SQLite format 3\0', 'latin1').copy(bytes)
    writeFileSync(file, bytes)
    const run = spawnServer(['--import', 'tsx', 'src/main.ts'], { PORT: String(await freePort()), DATABASE_URL: `file:${file}` }, children)
    const says = new RegExp(`^the SQLite database ${file} could not be opened or migrated \\(file is not a database\\)\\.`)
    await expectRefusal(run, 'Cannot start: DATABASE_URL: ', says, 20_000)
    expect(readFileSync(file)).toEqual(bytes)
  })
})

describe('databaseStartupError', () => {
  it('makes a multi-line driver or migration CLI report one line, without the URL\'s credentials', () => {
    const report = [
      'prisma migrate deploy failed (exit 1):',
      'Prisma schema loaded from prisma/postgres/schema.prisma',
      `Datasource "db": PostgreSQL database "tasks" at "postgresql://app:${PASSWORD}@db.internal:5432"`,
      '',
      'Error: P3018',
      '',
      'A migration failed to apply.',
    ].join('\n')
    const error = databaseStartupError({ databaseProvider: 'postgres', databaseUrl: `postgresql://app:${PASSWORD}@db.internal:5432/tasks` }, new Error(report))
    expect(error.message).toBe(
      'DATABASE_URL: PostgreSQL at db.internal:5432/tasks could not be opened or migrated (Error: P3018). Correct DATABASE_URL, or the database or file it names, and start again.',
    )
    const other = databaseStartupError({ databaseProvider: 'postgres', databaseUrl: 'postgresql://h/db' }, new Error(`connect to postgresql://app:${PASSWORD}@h/db failed\nfor a reason`))
    expect(other.message).toContain('(for a reason)')
    expect(other.message).not.toContain(PASSWORD)
    expect(withoutCredentials(`postgresql://app:${PASSWORD}@h/db and redis://:${PASSWORD}@r:6379`)).toBe('postgresql://h/db and redis://r:6379')
  })
})
