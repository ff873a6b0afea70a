import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import type { DatabaseProvider } from '../../src/config/config.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { createStore } from '../../src/store/store.ts'
import { appendMessageContent } from '../../src/store/message-content.ts'
import { findMessage, messageContent } from '../../src/store/messages.ts'
import { messagesOfSession } from '../../src/store/sessions.ts'
import { emptyDatabase, PROVIDERS } from '../support/databases.ts'

const root = new URL('../..', import.meta.url).pathname
const CHUNKS_MIGRATION = '20261208010000_message_chunks'

function migrationScripts(provider: DatabaseProvider) {
  const dir = path.join(root, 'prisma', provider, 'migrations')
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()
    .map((name) => ({ name, sql: readFileSync(path.join(dir, name, 'migration.sql'), 'utf8') }))
}

/** Runs SQL scripts on the database as the migration engine would, without Prisma's client. */
async function runScripts(provider: DatabaseProvider, url: string, scripts: string[]) {
  if (provider === 'sqlite') {
    const db = new DatabaseSync(url.replace(/^file:/, ''))
    try {
      for (const sql of scripts) db.exec(sql)
    } finally {
      db.close()
    }
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (const sql of scripts) await client.query(sql)
  } finally {
    await client.end()
  }
}

describe.each(PROVIDERS)('the message_chunks migration (%s)', (provider) => {
  it('carries existing messages over: a multi-MB message stored before it reads whole and exact, and takes appends after it', async () => {
    const scripts = migrationScripts(provider)
    const at = scripts.findIndex((s) => s.name === CHUNKS_MIGRATION)
    expect(at).toBeGreaterThan(0)
    const url = await emptyDatabase(provider)
    await runScripts(
      provider,
      url,
      scripts.slice(0, at).map((s) => s.sql),
    )
    // Rows as the previous schema stored them: the whole content in the message's row.
    const content = `${'0123456789;'.repeat(300_000)}😀 it's "quoted"`
    const now = provider === 'sqlite' ? String(Date.now()) : `'${new Date().toISOString()}'`
    await runScripts(provider, url, [
      `INSERT INTO "User" ("id", "name") VALUES ('u', 'u');
       INSERT INTO "Workspace" ("id", "name") VALUES ('w', 'w');
       INSERT INTO "WorkflowStep" ("id", "workspaceId", "name", "position") VALUES ('s', 'w', 's', 0);
       INSERT INTO "Task" ("id", "workspaceId", "workflowStepId", "title") VALUES ('t', 'w', 's', 't');
       INSERT INTO "Session" ("id", "taskId", "agentProfile") VALUES ('x', 't', 'mock');
       INSERT INTO "Message" ("id", "sessionId", "taskId", "author", "kind", "status", "version", "content", "createdAt", "updatedAt")
         VALUES ('m', 'x', 't', 'AGENT', 'MESSAGE', 'COMPLETED', 7, '${content.replaceAll("'", "''")}', ${now}, ${now});`,
    ])
    await runScripts(provider, url, [scripts[at]!.sql])

    const db = await connectDatabase(provider, url)
    try {
      const store = createStore(db)
      expect(await messageContent(store, 'm')).toBe(content)
      expect((await messagesOfSession(store, 'x', 10))![0]!.content).toBe(content)
      expect(await appendMessageContent(store, 'm', ' and more')).toMatchObject({ version: 8 })
      const after = (await findMessage(store, 'm'))!
      expect(after.content).toBe(`${content} and more`)
      expect(after.version).toBe(8)
    } finally {
      await db.$disconnect()
    }
  })
})
