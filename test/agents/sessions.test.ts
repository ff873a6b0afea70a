import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import {
  AddMessageDocument,
  AnswerClarificationDocument,
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  DeleteSessionDocument,
  DismissSessionErrorDocument,
  RespondToPermissionDocument,
  ResumeSessionDocument,
  SessionDetailDocument,
  StartSessionDocument,
  StopSessionDocument,
  TaskStatusSummariesDocument,
} from '../generated/graphql.ts'

const script = (...steps: object[]) => JSON.stringify({ script: steps })

describe('sessions with the real mock agent (sqlite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite', {
      env: { AGENT_PROFILES: JSON.stringify({ broken: { command: ['/nonexistent/agent-binary'] } }) },
    })
    token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'dev' })).createUser.token
    workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: 'agents' })).createWorkspace.id
  })
  afterAll(() => server?.close())

  const gql = <R, V>(doc: Parameters<typeof ok<R, V>>[2], vars: V) => ok<R, V>(server.graphqlUrl, token, doc, ...([vars] as never))
  const newTask = async (title = 't', repositories?: { name: string; localPath?: string; baseBranch?: string }[]) =>
    (await gql(CreateTaskDocument, { input: { workspaceId, title, repositories } })).createTask.id
  const start = async (taskId: string) => (await gql(StartSessionDocument, { input: { taskId } })).startSession
  const send = (taskId: string, sessionId: string, content: string, clientMessageId = randomUUID()) =>
    gql(AddMessageDocument, { input: { taskId, sessionId, clientMessageId, content } })
  const detail = async (id: string) => (await gql(SessionDetailDocument, { id, last: 1000 })).session!
  const summary = async (taskId: string) => {
    await server.projector.idle()
    return (await gql(TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!
  }
  const idle = (sessionId: string) =>
    eventually(async () => {
      const s = await detail(sessionId)
      return s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt) && s
    })
  const agentText = (s: Awaited<ReturnType<typeof detail>>) =>
    s.messages.filter((m) => m.author === 'AGENT' && m.kind === 'MESSAGE').map((m) => m.content)

  it('starts a session, streams a reply to a plain prompt, and completes the turn', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    expect(session.state).toBe('WAITING_FOR_INPUT')
    const { addMessage } = await send(taskId, session.id, 'hello there')
    expect(addMessage).toMatchObject({ replayed: false, message: { author: 'USER', content: 'hello there' } })
    const done = await idle(session.id)
    expect(agentText(done)).toEqual(['echo: hello there'])
    expect(done.turns.filter((t) => !t.lifecycleOnly)).toHaveLength(1)
    expect((await summary(taskId)).primarySession).toEqual({ id: session.id, state: 'WAITING_FOR_INPUT' })
  })

  it('GIVEN the first response is uncertain, WHEN the client retries the same id, THEN one message is stored and one prompt dispatched', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    const id = randomUUID()
    const first = await send(taskId, session.id, 'once', id)
    const retry = await send(taskId, session.id, 'once', id)
    expect(first.addMessage.replayed).toBe(false)
    expect(retry.addMessage).toMatchObject({ replayed: true, message: { id, content: 'once' } })
    await idle(session.id)
    await send(taskId, session.id, 'count')
    const done = await idle(session.id)
    expect(agentText(done).at(-1)).toBe('prompts received: 2')
    expect(done.messages.filter((m) => m.author === 'USER')).toHaveLength(2)
  })

  it('100 concurrent requests with one id store one message and dispatch one prompt', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    const id = randomUUID()
    const results = await Promise.all(Array.from({ length: 100 }, () => send(taskId, session.id, 'burst', id)))
    expect(results.filter((r) => !r.addMessage.replayed)).toHaveLength(1)
    expect(new Set(results.map((r) => r.addMessage.message.id))).toEqual(new Set([id]))
    await idle(session.id)
    await send(taskId, session.id, 'count')
    expect(agentText(await idle(session.id)).at(-1)).toBe('prompts received: 2')
  })

  it('reuse of a client message id in another task is a CONFLICT and stores nothing', async () => {
    const a = await newTask('a')
    const b = await newTask('b')
    const sa = await start(a)
    const sb = await start(b)
    const id = randomUUID()
    await send(a, sa.id, 'mine', id)
    const refused = await http(server.graphqlUrl, token, AddMessageDocument, { input: { taskId: b, sessionId: sb.id, clientMessageId: id, content: 'theirs' } })
    expect(errorCodes(refused)).toEqual(['CONFLICT'])
    expect(await server.store.db.message.count({ where: { taskId: b } })).toBe(0)
    expect((await server.store.db.message.findFirstOrThrow({ where: { clientMessageId: id } })).content).toBe('mine')
    expect((await detail(sb.id)).turns.filter((t) => !t.lifecycleOnly)).toHaveLength(0)
    await idle(sa.id)
  })

  it('a client message id used in a workspace the caller cannot see behaves as unused: a new message, the owner’s untouched', async () => {
    const a = await newTask('a')
    const sa = await start(a)
    const id = randomUUID()
    await send(a, sa.id, 'mine', id)
    await idle(sa.id)
    const other = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'other' })).createUser.token
    const otherWorkspace = (await ok(server.graphqlUrl, other, CreateWorkspaceDocument, { name: 'elsewhere' })).createWorkspace.id
    const b = (await ok(server.graphqlUrl, other, CreateTaskDocument, { input: { workspaceId: otherWorkspace, title: 'b' } })).createTask.id
    const sb = (await ok(server.graphqlUrl, other, StartSessionDocument, { input: { taskId: b } })).startSession.id
    const input = { taskId: b, sessionId: sb, clientMessageId: id, content: 'theirs' }
    const fresh = await http(server.graphqlUrl, other, AddMessageDocument, { input })
    expect(fresh.errors).toBeUndefined()
    expect(fresh.data?.addMessage).toMatchObject({ replayed: false, message: { id, taskId: b, sessionId: sb, content: 'theirs' } })
    // Within the other workspace the id is now owned there: a retry replays, like any fresh id's.
    expect((await ok(server.graphqlUrl, other, AddMessageDocument, { input })).addMessage).toMatchObject({ replayed: true, message: { id, content: 'theirs' } })
    const mine = (await detail(sa.id)).messages.filter((m) => m.author === 'USER')
    expect(mine).toMatchObject([{ id, content: 'mine', version: 1 }])
    expect((await detail(sa.id)).turns.filter((t) => !t.lifecycleOnly)).toHaveLength(1)
  })

  it('rejects a bad client message id or oversized content with BAD_USER_INPUT and stores nothing', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    const before = await server.store.db.message.count()
    for (const input of [
      { clientMessageId: '', content: 'x' },
      { clientMessageId: 'has space', content: 'x' },
      { clientMessageId: 'x'.repeat(129), content: 'x' },
      { clientMessageId: 'ok', content: 'é'.repeat(128 * 1024 + 1) },
    ]) {
      const result = await http(server.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId: session.id, ...input } })
      expect(errorCodes(result)).toEqual(['BAD_USER_INPUT'])
    }
    expect(await server.store.db.message.count()).toBe(before)
  })

  it('a permission stays pending while unrelated tool calls of the same session complete, then clears when answered', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    await send(taskId, session.id, script(
      { permission: { title: 'Run tests?', wait: false } },
      { tool: { title: 'Read file', kind: 'read', status: 'completed' } },
      { tool: { title: 'Grep', kind: 'search', status: 'completed' } },
    ))
    const withTools = await eventually(async () => {
      const s = await detail(session.id)
      return s.messages.filter((m) => m.kind === 'TOOL_CALL' && m.status === 'COMPLETED').length === 2 && s
    })
    const permission = withTools.messages.find((m) => m.kind === 'PERMISSION_REQUEST')!
    expect(permission.status).toBe('PENDING')
    expect(withTools.state).toBe('RUNNING')
    expect(await summary(taskId)).toMatchObject({ pendingAction: 'PERMISSION', foregroundActivity: 'GENERATING' })

    expect(errorCodes(await http(server.graphqlUrl, token, RespondToPermissionDocument, { sessionId: session.id, pendingId: permission.pendingId!, optionId: 'maybe' }))).toEqual(['BAD_USER_INPUT'])
    const answered = await gql(RespondToPermissionDocument, { sessionId: session.id, pendingId: permission.pendingId!, optionId: 'allow' })
    expect(answered.respondToPermission).toMatchObject({ status: 'APPROVED', version: 2 })
    await idle(session.id)
    expect(await summary(taskId)).toMatchObject({ pendingAction: null, foregroundActivity: null })
  })

  it('a clarification is answered and the turn ends', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    await send(taskId, session.id, script({ clarify: { question: 'Which branch?' } }, { say: 'thanks' }))
    const asked = await eventually(async () => (await detail(session.id)).messages.find((m) => m.kind === 'CLARIFICATION'))
    expect(asked).toMatchObject({ content: 'Which branch?', status: 'PENDING' })
    expect((await summary(taskId)).pendingAction).toBe('CLARIFICATION')
    const { answerClarification } = await gql(AnswerClarificationDocument, { sessionId: session.id, pendingId: asked.pendingId!, answer: 'main' })
    expect(answerClarification.status).toBe('ANSWERED')
    const done = await idle(session.id)
    expect(agentText(done)).toEqual(['thanks'])
    expect((await summary(taskId)).pendingAction).toBeNull()
  })

  it('publishes model configuration to Session.models', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    await send(taskId, session.id, script({ models: { current: 'm1', available: ['m1', 'm2'] } }))
    const done = await idle(session.id)
    expect(done.models).toEqual({ currentModelId: 'm1', available: [{ id: 'm1', name: 'M1' }, { id: 'm2', name: 'M2' }] })
  })

  it('a subagent counts in activeSubagentCount and shows BACKGROUND activity once the turn is over', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    // The subagent's end is a later prompt's step, not a timer: nothing here depends on wall time.
    await send(taskId, session.id, script({ subagent: { title: 'explore', id: 'explore-1' } }))
    await idle(session.id)
    expect(await summary(taskId)).toMatchObject({ activeSubagentCount: 1, foregroundActivity: 'BACKGROUND' })
    await send(taskId, session.id, script({ finishSubagent: 'explore-1' }))
    await idle(session.id)
    expect(await summary(taskId)).toMatchObject({ activeSubagentCount: 0, foregroundActivity: null })
  })

  it('a recoverable agent error becomes the session error and the active error, and a newer agent response clears it', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    await send(taskId, session.id, script({ error: { code: 'rate_limited', message: 'Slow down' } }))
    const failed = await idle(session.id)
    expect(failed.error).toMatchObject({ code: 'rate_limited', message: 'Slow down' })
    expect((await summary(taskId)).activeError).toMatchObject({ sessionId: session.id, category: 'rate_limited', recoveryActions: ['RETRY_DEFAULT'] })
    await send(taskId, session.id, 'try again')
    const recovered = await idle(session.id)
    expect(recovered.error).toBeNull()
    expect((await summary(taskId)).activeError).toBeNull()
    await send(taskId, session.id, script({ error: { code: 'overloaded', message: 'x' } }))
    await idle(session.id)
    const { dismissSessionError } = await gql(DismissSessionErrorDocument, { sessionId: session.id })
    expect(dismissSessionError.error).toBeNull()
    expect((await summary(taskId)).activeError).toBeNull()
  })

  it('a crash mid-turn makes the session FAILED with an error in the summary; resume records a lifecycle-only turn and keeps lastActivityAt', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    await send(taskId, session.id, script({ say: 'about to crash' }, { crash: 3 }))
    const crashed = await eventually(async () => {
      const s = await detail(session.id)
      return s.state === 'FAILED' && s
    })
    expect(crashed.error?.code).toBe('agent_crashed')
    expect(agentText(crashed)).toEqual(['about to crash'])
    const failed = await summary(taskId)
    expect(failed).toMatchObject({ primarySession: { state: 'FAILED' }, activeError: { sessionId: session.id, recoveryActions: ['RESUME_SESSION'] } })

    const { resumeSession } = await gql(ResumeSessionDocument, { id: session.id })
    expect(resumeSession.state).toBe('WAITING_FOR_INPUT')
    const resumed = await detail(session.id)
    expect(resumed.turns.at(-1)).toMatchObject({ lifecycleOnly: true })
    expect(resumed.turns.at(-1)?.completedAt).not.toBeNull()
    expect((await summary(taskId)).lastActivityAt).toBe(failed.lastActivityAt)
  })

  it('stop cancels the turn and its pending requests; delete removes the session and its error', async () => {
    const taskId = await newTask()
    const session = await start(taskId)
    await send(taskId, session.id, script({ permission: { title: 'Deploy?' } }))
    await eventually(async () => (await detail(session.id)).messages.find((m) => m.kind === 'PERMISSION_REQUEST'))
    const { stopSession } = await gql(StopSessionDocument, { id: session.id })
    expect(stopSession.state).toBe('CANCELLED')
    const stopped = await detail(session.id)
    expect(stopped.messages.find((m) => m.kind === 'PERMISSION_REQUEST')?.status).toBe('CANCELLED')
    expect(stopped.turns.every((t) => t.completedAt)).toBe(true)
    expect((await summary(taskId)).pendingAction).toBeNull()
    await gql(DeleteSessionDocument, { id: session.id })
    expect(await server.store.db.session.count({ where: { id: session.id } })).toBe(0)
    expect((await summary(taskId)).primarySession).toBeNull()
  })

  it('a launch that fails before a session exists stores a task launch error and answers with a clear error', async () => {
    const repo = mkdtempSync(path.join(os.tmpdir(), 'tss-repo-'))
    execFileSync('git', ['init', '-q', '-b', 'main', repo])
    writeFileSync(path.join(repo, 'a.txt'), 'a\n')
    execFileSync('git', ['-C', repo, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qam', 'init', '--allow-empty'])
    const taskId = await newTask('launch', [{ name: 'acme/web', localPath: repo, baseBranch: 'does-not-exist' }])
    const missingBase = await http(server.graphqlUrl, token, StartSessionDocument, { input: { taskId } })
    expect(errorCodes(missingBase)).toEqual(['BAD_USER_INPUT'])
    expect(missingBase.errors?.[0]?.extensions?.launchError).toMatchObject({ category: 'missing_base_branch' })
    expect(await server.store.db.session.count({ where: { taskId } })).toBe(0)
    expect((await summary(taskId)).activeError).toMatchObject({ sessionId: null, category: 'missing_base_branch', recoveryActions: ['PICK_BASE_BRANCH', 'RETRY_DEFAULT'] })

    const other = await newTask('other')
    const unknown = await http(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: other, agentProfile: 'nope' } })
    expect(unknown.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', launchError: { category: 'unknown_agent_profile' } })
    const broken = await http(server.graphqlUrl, token, StartSessionDocument, { input: { taskId: other, agentProfile: 'broken' } })
    expect(broken.errors?.[0]?.extensions).toMatchObject({ code: 'CONFLICT', launchError: { category: 'agent_command_not_found' } })
    expect((await summary(other)).activeError?.category).toBe('agent_command_not_found')
    // A successful launch clears the task-owned launch error.
    await start(other)
    expect((await summary(other)).activeError).toBeNull()
  })
})
