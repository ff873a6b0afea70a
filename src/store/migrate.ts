import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DatabaseProvider } from '../config/config.ts'
import { makeFolderSync } from '../util/make-folder.ts'
import type { Db } from './db.ts'

/**
 * The project folder holding the Prisma CLI configs, migrations and node_modules: found by walking
 * up, because this module runs from src/store under tsx and from the build output (dist/store, or
 * any outDir inside the project) under plain node.
 */
function projectRoot(): string {
  const start = path.dirname(fileURLToPath(import.meta.url))
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'prisma.sqlite.config.ts'))) return dir
    if (path.dirname(dir) === dir) throw new Error(`no prisma.sqlite.config.ts in ${start} or any folder above it`)
  }
}

const root = projectRoot()

/** The SQLite file's folder must exist before Prisma can create the file. */
export function ensureSqliteDirectory(url: string): void {
  const file = url.replace(/^file:/, '').replace(/\?.*$/, '')
  if (file && file !== ':memory:') makeFolderSync(path.dirname(path.resolve(root, file)))
}

/**
 * Applies pending migrations with `prisma migrate deploy` (the wasm schema engine: no download).
 * Resolves with the CLI's output; rejects with it when the CLI fails.
 */
export async function deployMigrations(provider: DatabaseProvider, url: string): Promise<string> {
  if (provider === 'sqlite') ensureSqliteDirectory(url)
  const urlVariable = provider === 'sqlite' ? 'SQLITE_URL' : 'POSTGRES_URL'
  const cli = path.join(root, 'node_modules', 'prisma', 'build', 'index.js')
  const child = spawn(process.execPath, [cli, 'migrate', 'deploy', '--config', `prisma.${provider}.config.ts`], {
    cwd: root,
    env: { ...process.env, [urlVariable]: url, DATABASE_URL: url, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr.on('data', (d: Buffer) => (output += d.toString()))
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', resolve)
  })
  if (code !== 0) throw new Error(`prisma migrate deploy failed (exit ${code}):\n${output}`)
  return output
}

/** The migrations this build ships for the provider: folder names, oldest first. */
export function shippedMigrations(provider: DatabaseProvider): string[] {
  const dir = path.join(root, 'prisma', provider, 'migrations')
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(dir, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
}

/**
 * Shipped migrations the database has not finished applying, read from Prisma's own
 * `_prisma_migrations` table. A restart usually finds none, and then skips the CLI, whose start
 * alone takes seconds on a busy machine (R2's readiness bound). No table, or a failed
 * migration: everything it lacks is pending, and `prisma migrate deploy` decides (and reports).
 */
export async function pendingMigrations(db: Db, provider: DatabaseProvider): Promise<string[]> {
  const shipped = shippedMigrations(provider)
  let applied: { migration_name: string }[]
  try {
    applied = await db.$queryRawUnsafe('SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL')
  } catch {
    return shipped // a database no migration has touched yet
  }
  const done = new Set(applied.map((row) => row.migration_name))
  return shipped.filter((name) => !done.has(name))
}
