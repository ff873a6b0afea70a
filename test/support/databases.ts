import { copyFileSync, mkdtempSync } from 'node:fs'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import type { DatabaseProvider } from '../../src/config/config.ts'
import { POSTGRES_TEMPLATE } from './global-setup.ts'

/** Every persistence test runs on both providers. */
export const PROVIDERS: DatabaseProvider[] = ['sqlite', 'postgres']

export function postgresUrl(database: string): string {
  return `postgresql://postgres@127.0.0.1:${inject('postgresPort')}/${database}`
}

export async function postgresAdmin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl('postgres') })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(inject('tempRoot'), `${prefix}-`))
}

/** A new, empty database of the provider, without migrations. */
export async function emptyDatabase(provider: DatabaseProvider): Promise<string> {
  if (provider === 'sqlite') return `file:${path.join(tempDir('sqlite'), 'app.db')}`
  const name = `tss_${randomUUID().replaceAll('-', '')}`
  await postgresAdmin(`CREATE DATABASE ${name}`)
  return postgresUrl(name)
}

/** A new database of the provider with every migration applied (cloned from the run's template). */
export async function migratedDatabase(provider: DatabaseProvider): Promise<string> {
  if (provider === 'sqlite') {
    const file = path.join(tempDir('sqlite'), 'app.db')
    copyFileSync(inject('sqliteTemplate').replace(/^file:/, ''), file)
    return `file:${file}`
  }
  const name = `tss_${randomUUID().replaceAll('-', '')}`
  await postgresAdmin(`CREATE DATABASE ${name} TEMPLATE ${POSTGRES_TEMPLATE}`)
  return postgresUrl(name)
}
