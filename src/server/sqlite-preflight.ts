import { constants } from 'node:fs'
import { access, mkdir, open, rmdir, stat, unlink } from 'node:fs/promises'
import path from 'node:path'
import { makeFolderSync } from '../util/make-folder.ts'
import { NoAnswer, withinDeadline } from '../util/deadline.ts'
import { StartupError } from './startup-error.ts'

/** The first 16 bytes of every SQLite 3 database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1')

/** The database file of a `file:` URL (absolute), or undefined for an in-memory database. */
export function sqliteFile(databaseUrl: string): string | undefined {
  const file = databaseUrl.replace(/^file:/, '').replace(/\?.*$/, '')
  return file && file !== ':memory:' ? path.resolve(file) : undefined
}

/** The lock file beside a SQLite database file (`app.db` → `app.db.lock`). */
export function sqliteLockFile(databaseUrl: string): string | undefined {
  const file = sqliteFile(databaseUrl)
  return file ? `${file}.lock` : undefined
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException)?.code ?? 'unknown error'
const DATABASE_URL = 'DATABASE_URL'
const ELSEWHERE = 'or point DATABASE_URL at another file.'

/**
 * Whether the server can keep its database at the file of a `file:` URL, without creating or
 * changing anything: not a folder, a SQLite database or empty or absent, readable and writable, in
 * a folder (or under the nearest existing one) the server's user may write in. Every call is on
 * the thread pool within `timeoutMs`, so a file system that never answers (a hung network mount)
 * ends the start too, instead of holding it with no word.
 */
export async function probeSqliteFile(databaseUrl: string, timeoutMs: number): Promise<void> {
  const file = sqliteFile(databaseUrl)
  if (!file) return
  try {
    await withinDeadline(timeoutMs, inspect(file))
  } catch (error) {
    if (error instanceof StartupError) throw error
    if (error instanceof NoAnswer)
      throw new StartupError(`the file system gave no answer about ${file} within ${timeoutMs} ms`, DATABASE_URL, `Check the mount it is on, ${ELSEWHERE}`)
    throw new StartupError(`cannot reach ${file} (${codeOf(error)})`, DATABASE_URL, `Check the path and its folders’ permissions, ${ELSEWHERE}`)
  }
}

async function inspect(file: string): Promise<void> {
  const found = await stat(file).catch((error: unknown) => {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  })
  if (!found) return inspectFolderFor(file)
  if (found.isDirectory())
    throw new StartupError(`${file} is a folder, not a database file`, DATABASE_URL, `Name a file in it, such as file:${path.join(file, 'app.db')}.`)
  if (!found.isFile()) throw new StartupError(`${file} is not a regular file`, DATABASE_URL, `Name a SQLite database file, ${ELSEWHERE}`)
  await writable(file, `${file} is read-only for the server’s user`)
  await writable(path.dirname(file), `the folder of ${file} is read-only for the server’s user (SQLite writes its journal and lock files beside the database)`)
  if (found.size === 0) return // SQLite takes an empty file as a new database
  const handle = await open(file, 'r')
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(SQLITE_HEADER.length), 0, SQLITE_HEADER.length, 0)
    if (bytesRead < SQLITE_HEADER.length || !buffer.equals(SQLITE_HEADER))
      throw new StartupError(`${file} is not a SQLite database`, DATABASE_URL, `Point DATABASE_URL at a SQLite database, or at a new file (the server creates it).`)
  } finally {
    await handle.close()
  }
}

/**
 * A new database file: what the start will create is created once and removed at once (the first
 * missing folder, or a probe file beside the database), since only trying tells. Permission bits
 * do not: root may write anywhere but on a read-only mount, and procfs refuses every new entry.
 */
async function inspectFolderFor(file: string): Promise<void> {
  let missing: string | undefined
  for (let folder = path.dirname(file); ; missing = folder, folder = path.dirname(folder)) {
    const found = await stat(folder).catch((error: unknown) => {
      if (codeOf(error) === 'ENOENT' && path.dirname(folder) !== folder) return undefined
      throw error
    })
    if (!found) continue
    if (!found.isDirectory()) throw new StartupError(`${folder} is not a folder, so ${file} cannot be created`, DATABASE_URL, `Correct the path, ${ELSEWHERE}`)
    return missing ? canCreateFolder(missing) : canCreateFile(file, folder)
  }
}

async function canCreateFolder(folder: string): Promise<void> {
  try {
    await mkdir(folder)
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return // made meanwhile by someone else
    throw new StartupError(`cannot create the folder ${folder} for the SQLite database (${codeOf(error)})`, DATABASE_URL, `Create it, ${ELSEWHERE}`)
  }
  await rmdir(folder).catch(() => undefined)
}

async function canCreateFile(file: string, folder: string): Promise<void> {
  const probe = `${file}.probe-${process.pid}`
  try {
    await (await open(probe, 'wx')).close()
  } catch (error) {
    throw new StartupError(`cannot create ${file}: the folder ${folder} refuses new files from the server’s user (${codeOf(error)})`, DATABASE_URL, `Give the server’s user write access, ${ELSEWHERE}`)
  }
  await unlink(probe).catch(() => undefined)
}

async function writable(entry: string, problem: string): Promise<void> {
  try {
    await access(entry, constants.R_OK | constants.W_OK)
  } catch (error) {
    throw new StartupError(`${problem} (${codeOf(error)})`, DATABASE_URL, `Give the server’s user write access, ${ELSEWHERE}`)
  }
}

/**
 * One SQLite file serves one server process: a second one would race on migrations and on the
 * runtime state only one process can own (agents, startup recovery). The lock is SQLite's own
 * write lock on a small companion database, held for the process's lifetime; the operating
 * system drops it when the process dies, however it dies, so no stale lock is ever left behind.
 *
 * The connections holding SQLite locks. Without a reference of its own, a lock would last only as
 * long as its caller kept the release function: once that is garbage, the collector closes the
 * connection and another process could open the same file.
 */
const heldLocks = new Set<{ dispose(): Promise<void> }>()

export async function lockSqliteDatabase(databaseUrl: string): Promise<() => Promise<void>> {
  const lockFile = sqliteLockFile(databaseUrl)
  if (!lockFile) return async () => {}
  const databaseFile = lockFile.slice(0, -'.lock'.length)
  const folder = path.dirname(lockFile)
  try {
    makeFolderSync(folder)
  } catch (error) {
    throw new StartupError(`cannot create the folder ${folder} for the SQLite database (${codeOf(error)})`, DATABASE_URL, `Create it, ${ELSEWHERE}`)
  }
  // Loaded here: main.ts checks DATABASE_URL before it loads the rest of the server.
  const { PrismaBetterSQLite3 } = await import('@prisma/adapter-better-sqlite3')
  let connection: Awaited<ReturnType<InstanceType<typeof PrismaBetterSQLite3>['connect']>> | undefined
  try {
    // timeout 0: a lock held elsewhere is an answer now, not after SQLite's busy wait.
    connection = await new PrismaBetterSQLite3({ url: `file:${lockFile}`, timeout: 0 }).connect()
    // A write lock that is never committed: nothing is written, so the journal can stay in memory
    // and no -journal file appears beside the lock.
    await connection.executeScript('PRAGMA journal_mode = MEMORY; BEGIN IMMEDIATE;')
  } catch (error) {
    await connection?.dispose().catch(() => undefined)
    // The adapter reports SQLITE_BUSY as the driver-neutral kind `SocketTimeout`.
    if ((error as { cause?: { kind?: string } })?.cause?.kind === 'SocketTimeout')
      throw new StartupError(
        `another server process is already using the SQLite database ${databaseFile}`,
        DATABASE_URL,
        `Stop that process, or point DATABASE_URL at another file; one SQLite file serves one process (run several instances on PostgreSQL). Lock: ${lockFile}`,
      )
    throw new StartupError(
      `cannot create or open ${lockFile} beside the SQLite database`,
      DATABASE_URL,
      'Make its directory writable by the server’s user, or point DATABASE_URL elsewhere.',
    )
  }
  const held = connection
  heldLocks.add(held)
  return async () => {
    heldLocks.delete(held)
    await held.dispose()
  }
}
