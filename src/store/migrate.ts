import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DatabaseProvider } from '../config/config.ts'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** The SQLite file's folder must exist before Prisma can create the file. */
export function ensureSqliteDirectory(url: string): void {
  const file = url.replace(/^file:/, '').replace(/\?.*$/, '')
  if (file && file !== ':memory:') mkdirSync(path.dirname(path.resolve(root, file)), { recursive: true })
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
