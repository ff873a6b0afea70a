// What startup recovery may treat as left open by a dead process depends on whether this server
// can be the database's only one: a SQLite file has one server (its lock), PostgreSQL may have others.
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer } from '../support/server.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createWorkspace } from '../../src/store/workspaces.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { createSession } from '../../src/store/sessions.ts'
import { startTurn } from '../../src/store/turns.ts'
import { wholeContent } from '../../src/store/message-content.ts'

describe.each(PROVIDERS)('startup recovery of work left open in a session not marked running (%s)', (provider) => {
  it(provider === 'sqlite' ? 'closes it: nothing else can be running it' : 'leaves it: another instance may be running it', async () => {
    const first = await startTestServer(provider)
    const owner = await first.store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
    const workspace = await createWorkspace(first.store, 'W', owner.id)
    const task = await createTask(first.store, { workspaceId: workspace.id, title: 't' })
    // What an older server's recovery left behind: the session waits, its turn and stream never closed.
    const session = await createSession(first.store, { taskId: task.id, agentProfile: 'mock', state: 'WAITING_FOR_INPUT' })
    const turn = await startTurn(first.store, { sessionId: session.id })
    const stream = await insertMessage(first.store, { id: randomUUID(), sessionId: session.id, turnId: turn.id, author: 'AGENT', kind: 'MESSAGE', content: '0;1;', status: 'IN_PROGRESS' })
    await first.projector.idle()
    await first.close()

    const second = await startTestServer(provider, { databaseUrl: first.databaseUrl, env: { ADMIN_TOKEN: first.adminToken } })
    try {
      const turnAfter = await second.store.db.turn.findUniqueOrThrow({ where: { id: turn.id } })
      const streamAfter = (await wholeContent(second.store, await second.store.db.message.findUniqueOrThrow({ where: { id: stream.id } })))!
      if (provider === 'sqlite') {
        expect(turnAfter).toMatchObject({ interrupted: true, stopReason: 'interrupted' })
        expect(turnAfter.completedAt).not.toBeNull()
        expect(streamAfter).toMatchObject({ status: 'INTERRUPTED', content: '0;1;' })
      } else {
        expect(turnAfter).toMatchObject({ completedAt: null, interrupted: false })
        expect(streamAfter.status).toBe('IN_PROGRESS')
      }
      expect((await second.store.db.session.findUniqueOrThrow({ where: { id: session.id } })).state).toBe('WAITING_FOR_INPUT')
    } finally {
      await second.close()
    }
  })
})
