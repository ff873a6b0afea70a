// The attention fields with the real mock agent behind a listening server: a prompt sent while a
// turn waits on a permission is queued (stored, counted, dispatched once the turn ends), and a
// restart that cuts a turn off leaves an interruption until the next turn is dispatched (a queued
// prompt too) or the user resumes.
import { afterEach, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import {
  AddMessageDocument,
  AttentionSummaryDocument,
  CreateTaskDocument,
  DeleteSessionDocument,
  RespondToPermissionDocument,
  ResumeSessionDocument,
  StartSessionDocument,
} from '../generated/graphql.ts'

const ASK = JSON.stringify({ script: [{ say: 'checking' }, { permission: { title: 'Run tests?' } }] })

const servers: TestServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function started(provider: (typeof PROVIDERS)[number], databaseUrl?: string, adminToken?: string) {
  const server = await startTestServer(provider, { ...(databaseUrl && { databaseUrl }), ...(adminToken && { env: { ADMIN_TOKEN: adminToken } }) })
  servers.push(server)
  return server
}

/** A task whose session waits on a permission: its first turn is in flight. */
/**
 * The process dies: its agents end and nothing more is written (what kill -9 leaves behind), and
 * its lease goes with it, as the lease of a dead process runs out. A second server then starts on
 * the same database; `after` reads the task's summary there.
 */
async function restartedAfterDeath(provider: (typeof PROVIDERS)[number], first: TestServer, token: string, taskId: string) {
  await first.sessions.abandon(first.sessions.liveSessionIds())
  await first.lease.release()
  servers.splice(servers.indexOf(first), 1)
  await first.close()
  const second = await started(provider, first.databaseUrl, first.adminToken)
  const after = () => ok(second.graphqlUrl, token, AttentionSummaryDocument, { taskIds: [taskId] }).then((d) => d.taskStatusSummaries[0]!)
  return { second, after }
}

async function waitingTask(server: TestServer) {
  const { token, workspaceId } = await userWithWorkspace(server, 'attention')
  const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 't' } })).createTask.id
  const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId, prompt: ASK } })).startSession.id
  const summary = () => ok(server.graphqlUrl, token, AttentionSummaryDocument, { taskIds: [taskId] }).then((d) => d.taskStatusSummaries[0]!)
  const waiting = await eventually(async () => {
    const s = await summary()
    return s.pendingAction === 'PERMISSION' && s
  })
  return { token, taskId, sessionId, summary, waiting }
}

describe.each(PROVIDERS)('queuedPromptCount with the mock agent (%s)', (provider) => {
  it('counts prompts sent behind a turn in flight, stored as queued, and drops as each is dispatched', { timeout: 60_000 }, async () => {
    const server = await started(provider)
    const { token, taskId, sessionId, summary, waiting } = await waitingTask(server)
    expect(waiting.queuedPromptCount).toBe(0)
    const request = await server.store.db.message.findFirstOrThrow({ where: { sessionId, kind: 'PERMISSION_REQUEST' } })
    expect(waiting.waitingSince).toBe(request.createdAt.toISOString())

    const send = (clientMessageId: string, content: string) =>
      ok(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId, content } })
    await send('q1', 'hello')
    await send('q2', 'count')
    await server.projector.idle()
    const queued = await summary()
    expect(queued.queuedPromptCount).toBe(2)
    // Queued prompts never reached the agent: the permission they wait behind still counts.
    expect(queued.pendingAction).toBe('PERMISSION')
    expect(queued.waitingSince).toBe(waiting.waitingSince)
    // The waiting state is in the store, not only in the runtime's memory.
    const turns = await server.store.db.turn.findMany({ where: { sessionId, queuedAt: { not: null }, completedAt: null } })
    expect(turns).toHaveLength(2)
    // A retry of a queued prompt is a replay: nothing more is queued.
    expect((await send('q1', 'hello')).addMessage.replayed).toBe(true)
    await server.projector.idle()
    expect((await summary()).queuedPromptCount).toBe(2)

    await ok(server.graphqlUrl, token, RespondToPermissionDocument, { sessionId, pendingId: request.pendingId!, optionId: 'allow' })
    await sessionSettled(server, sessionId)
    await server.projector.idle()
    const drained = await summary()
    expect(drained).toMatchObject({ queuedPromptCount: 0, pendingAction: null, waitingSince: null })
    const dispatched = await server.store.db.turn.findMany({ where: { sessionId, lifecycleOnly: false }, orderBy: { startedAt: 'asc' } })
    expect(dispatched.map((t) => [t.queuedAt, t.promptDispatchAttempted, t.stopReason])).toEqual([
      [null, true, 'end_turn'],
      [null, true, 'end_turn'],
      [null, true, 'end_turn'],
    ])
    // Each queued prompt went to the agent once: the mock's own count of prompts says 3.
    const reply = await server.store.db.message.findFirstOrThrow({ where: { sessionId, author: 'AGENT', content: { startsWith: 'prompts received' } }, orderBy: { createdAt: 'desc' } })
    expect(reply.content).toBe('prompts received: 3')
  })
})

describe.each(PROVIDERS)('interruption after a restart (%s)', (provider) => {
  it('a turn cut off by the restart: the prompt queued behind it runs once, and its dispatch answers the interruption', { timeout: 90_000 }, async () => {
    const first = await started(provider)
    const { token, taskId, sessionId, summary } = await waitingTask(first)
    const queued = { taskId, sessionId, clientMessageId: 'queued', content: 'count' }
    await ok(first.graphqlUrl, token, AddMessageDocument, { input: queued })
    await first.projector.idle()
    expect((await summary()).queuedPromptCount).toBe(1)
    expect((await summary()).interruption).toBeNull()
    const { second, after } = await restartedAfterDeath(provider, first, token, taskId)
    // The new owner dispatches the prompt that waited (never attempted) on a relaunched agent.
    const conversational = () => second.store.db.turn.findMany({ where: { sessionId, lifecycleOnly: false }, orderBy: { startedAt: 'asc' } })
    await eventually(async () => (await conversational()).every((t) => t.completedAt !== null))
    await sessionSettled(second, sessionId)
    await second.projector.idle()
    const turns = await conversational()
    expect(turns.map((t) => [t.stopReason, t.interruption, t.promptDispatchAttempted])).toEqual([
      ['interrupted', 'SERVER_RESTART', true],
      ['end_turn', null, true],
    ])
    const reply = await second.store.db.message.findFirstOrThrow({ where: { turnId: turns[1]!.id, author: 'AGENT', content: { startsWith: 'prompts received' } } })
    expect(reply.content).toBe('prompts received: 1')
    // The queued prompt went out after the cut: the session's newest dispatched turn is not the cut
    // one, so the mark is gone (MAPPING "interruption"; test/recovery/queued-prompts.test.ts sees it
    // set by the recovery and cleared by that dispatch, step by step).
    const answered = await after()
    expect(answered).toMatchObject({
      primarySession: { id: sessionId, state: 'WAITING_FOR_INPUT' },
      interruption: null,
      queuedPromptCount: 0,
      pendingAction: null,
      waitingSince: null,
    })
    // A retry of the queued prompt is a replay: nothing is sent again, nothing moves.
    expect((await ok(second.graphqlUrl, token, AddMessageDocument, { input: queued })).addMessage.replayed).toBe(true)
    await second.projector.idle()
    expect(await after()).toMatchObject({ interruption: null, revision: answered.revision })
  })

  it('resumeSession clears it, and deleteSession of the primary session hands it to the next primary', { timeout: 90_000 }, async () => {
    const first = await started(provider)
    const { token, taskId, sessionId, summary } = await waitingTask(first)
    // A second session whose turn is also in flight when the process dies.
    const other = (await ok(first.graphqlUrl, token, StartSessionDocument, { input: { taskId, prompt: ASK } })).startSession.id
    await eventually(async () => (await first.store.db.message.count({ where: { sessionId: other, kind: 'PERMISSION_REQUEST', status: 'PENDING' } })) === 1)
    expect((await summary()).primarySession?.id).toBe(sessionId)
    const { second, after } = await restartedAfterDeath(provider, first, token, taskId)
    expect((await after()).interruption).toMatchObject({ sessionId, reason: 'SERVER_RESTART' })
    // The primary session goes: the other one (cut off too) is primary now, and carries the interruption.
    await ok(second.graphqlUrl, token, DeleteSessionDocument, { id: sessionId })
    await second.projector.idle()
    expect((await after()).interruption).toMatchObject({ sessionId: other, reason: 'SERVER_RESTART' })
    // Resuming it is the user's answer to the cut: cleared.
    await ok(second.graphqlUrl, token, ResumeSessionDocument, { id: other })
    await second.projector.idle()
    expect((await after()).interruption).toBeNull()
  })
})
