import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { deployMigrations } from '../../src/store/migrate.ts'
import { startPostgresCluster } from './postgres-cluster.ts'
import { buildWebPage } from './web-build.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    postgresPort: number
    sqliteTemplate: string
    tempRoot: string
    webRoot: string
  }
}

export const POSTGRES_TEMPLATE = 'tss_template'

/**
 * Once per run: a throwaway PostgreSQL cluster and one migrated database of each provider.
 * Test files clone those templates (CREATE DATABASE … TEMPLATE, or a file copy) instead of
 * migrating again; test/persistence/migrations.test.ts deploys on fresh databases itself.
 * The page is built from the current sources into the run's temporary folder (never over dist/).
 */
export default async function setup(project: TestProject) {
  const tempRoot = mkdtempSync(path.join(os.tmpdir(), 'tss-test-'))
  const cluster = await startPostgresCluster()
  try {
    await cluster.query(`CREATE DATABASE ${POSTGRES_TEMPLATE}`)
    const sqliteTemplate = `file:${path.join(tempRoot, 'template.db')}`
    const webRoot = path.join(tempRoot, 'web')
    await Promise.all([
      deployMigrations('postgres', cluster.url(POSTGRES_TEMPLATE)),
      deployMigrations('sqlite', sqliteTemplate),
      buildWebPage(webRoot),
    ])
    project.provide('webRoot', webRoot)
    project.provide('postgresPort', cluster.port)
    project.provide('sqliteTemplate', sqliteTemplate)
    project.provide('tempRoot', tempRoot)
  } catch (error) {
    cluster.stop()
    throw error
  }
  return () => {
    cluster.stop()
    rmSync(tempRoot, { recursive: true, force: true })
  }
}
