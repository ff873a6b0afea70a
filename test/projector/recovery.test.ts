import { describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer } from '../support/server.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createWorkspace } from '../../src/store/workspaces.ts'
import { createSession } from '../../src/store/sessions.ts'
import { startTurn } from '../../src/store/turns.ts'
import { readSummaryRows, toStoredSummary } from '../../src/store/summaries.ts'

describe.each(PROVIDERS)('startup recovery (%s)', (provider) => {
  it('GIVEN a stored RUNNING + GENERATING summary, WHEN startup recovery moves the session to WAITING_FOR_INPUT, THEN a newer summary says so before the server reports ready', async () => {
    const first = await startTestServer(provider)
    const owner = await first.store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
    const workspace = await createWorkspace(first.store, 'W', owner.id)
    const task = await createTask(first.store, { workspaceId: workspace.id, title: 't' })
    const running = await createSession(first.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
    await startTurn(first.store, { sessionId: running.id })
    const orphan = await createSession(first.store, { taskId: task.id, agentProfile: 'gone', state: 'STARTING', isPrimary: false })
    await first.projector.idle()
    const [beforeRow] = await readSummaryRows(first.store, [task.id])
    const before = toStoredSummary(beforeRow!)
    expect(before.payload).toMatchObject({ primarySession: { id: running.id, state: 'RUNNING' }, foregroundActivity: 'GENERATING' })
    // The process dies without cleaning up: agent state stays as it was.
    await first.close()

    const second = await startTestServer(provider, { databaseUrl: first.databaseUrl, env: { ADMIN_TOKEN: first.adminToken } })
    try {
      // startServer resolves once ready: the repair must already be visible.
      expect(second.readiness.ready).toBe(true)
      const [afterRow] = await readSummaryRows(second.store, [task.id])
      const after = toStoredSummary(afterRow!)
      expect(after.revision).toBeGreaterThan(before.revision)
      expect(after.payload.primarySession).toEqual({ id: running.id, state: 'WAITING_FOR_INPUT' })
      expect(after.payload.foregroundActivity).toBeNull()
      expect(after.payload.lastActivityAt).toBe(before.payload.lastActivityAt)
      const orphanAfter = await second.store.db.session.findUniqueOrThrow({ where: { id: orphan.id } })
      expect(orphanAfter.state).toBe('FAILED')
      expect(orphanAfter.errorCode).toBe('agent_unavailable')
      expect((await fetch(`${second.url}/readyz`)).status).toBe(200)
      const release = second.readiness.hold('test')
      expect((await fetch(`${second.url}/readyz`)).status).toBe(503)
      release()
    } finally {
      await second.close()
    }
  })
})
