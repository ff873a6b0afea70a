import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { deployMigrations, pendingMigrations, shippedMigrations } from '../../src/store/migrate.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { emptyDatabase, migratedDatabase, PROVIDERS } from '../support/databases.ts'

const root = new URL('../..', import.meta.url).pathname

function prismaCli(provider: string, url: string, args: string[]) {
  return spawnSync(process.execPath, ['node_modules/prisma/build/index.js', ...args, '--config', `prisma.${provider}.config.ts`], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, [provider === 'sqlite' ? 'SQLITE_URL' : 'POSTGRES_URL']: url },
    timeout: 120_000,
  })
}

describe.each(PROVIDERS)('migrations (%s)', (provider) => {
  it('deploy every migration on a fresh database, and the result serves the whole model', async () => {
    const url = await emptyDatabase(provider)
    const output = await deployMigrations(provider, url)
    expect(output).toMatch(/migrations? (have been successfully applied|applied)|All migrations have been successfully applied/i)
    const status = prismaCli(provider, url, ['migrate', 'status'])
    expect(status.stdout + status.stderr).toContain('Database schema is up to date')

    const db = await connectDatabase(provider, url)
    try {
      const user = await db.user.create({ data: { name: 'u' } })
      const workspace = await db.workspace.create({
        data: { name: 'w', members: { create: { userId: user.id } }, steps: { create: { name: 's', position: 0 } } },
        include: { steps: true },
      })
      const task = await db.task.create({
        data: { workspaceId: workspace.id, workflowStepId: workspace.steps[0]!.id, title: 't' },
      })
      const session = await db.session.create({ data: { taskId: task.id, agentProfile: 'mock' } })
      await db.message.create({
        data: { id: 'client-1', sessionId: session.id, taskId: task.id, author: 'USER', kind: 'MESSAGE', content: 'hi' },
      })
      await db.taskStatusSummary.create({
        data: { taskId: task.id, workspaceId: workspace.id, revision: 1, payload: '{}', updatedAt: new Date() },
      })
      // Deleting a task deletes its summary and its dependent records.
      await db.task.delete({ where: { id: task.id } })
      expect(await db.taskStatusSummary.count()).toBe(0)
      expect(await db.message.count()).toBe(0)
      expect(await db.session.count()).toBe(0)
    } finally {
      await db.$disconnect()
    }
  })

  it('a start on an up-to-date database finds nothing pending (no CLI run); a missing or failed migration is pending', async () => {
    const shipped = shippedMigrations(provider)
    expect(shipped.length).toBeGreaterThan(0)
    const fresh = await connectDatabase(provider, await emptyDatabase(provider))
    const migrated = await connectDatabase(provider, await migratedDatabase(provider))
    try {
      expect(await pendingMigrations(fresh, provider)).toEqual(shipped)
      expect(await pendingMigrations(migrated, provider)).toEqual([])
      const last = shipped.at(-1)!
      // A migration that started and never finished is not applied: `migrate deploy` must see it (and report it).
      await migrated.$executeRawUnsafe(`UPDATE _prisma_migrations SET finished_at = NULL WHERE migration_name = '${last}'`)
      expect(await pendingMigrations(migrated, provider)).toEqual([last])
    } finally {
      await Promise.all([fresh.$disconnect(), migrated.$disconnect()])
    }
  })

  it('match the Prisma schema exactly (no model change without a migration)', async () => {
    const url = await emptyDatabase(provider)
    const diff = prismaCli(provider, url, [
      'migrate',
      'diff',
      '--from-migrations',
      `prisma/${provider}/migrations`,
      '--to-schema-datamodel',
      `prisma/${provider}`,
      '--exit-code',
    ])
    expect(diff.stdout + diff.stderr).toContain('No difference detected')
    expect(diff.status).toBe(0)
  })
})
