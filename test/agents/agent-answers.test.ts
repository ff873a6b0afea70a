// How the server reads what agents it did not write answer, with the mock agent doing what the
// real ones do (test/reference-agents/*.test.ts runs Claude Code itself): a prompt refused with
// a JSON-RPC error, a `session/load` that replays the history, a launch that fails with the
// agent's own words, permission options and tool-call detail, plan and mode (MAPPING "Real agents").
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MOCK_PROFILE } from '../../src/agents/profiles.ts'
import { HANDOFF_CAPACITY } from '../../src/agents/agent-process.ts'
import { HISTORY_DIR_ENV, REPLAY_ENV } from '../../src/agents/mock/session-history.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok, wsClient, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { capturedLogger } from '../support/captured-logger.ts'
import {
  AddMessageDocument,
  AgentSessionDetailDocument,
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  RespondToPermissionDocument,
  ResumeSessionDocument,
  SessionEventsDocument,
  StartSessionDocument,
  StopSessionDocument,
  TaskStatusSummariesDocument,
} from '../generated/graphql.ts'

const script = (...steps: object[]) => JSON.stringify({ script: steps })
const OVERLOADED = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'

describe('agents answering as real ones do (mock agent, sqlite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string
  const history = mkdtempSync(path.join(os.tmpdir(), 'tss-mock-history-'))
  const log = capturedLogger()

  beforeAll(async () => {
    // The mock remembers its sessions only where told to: a load then replays them, as real agents do.
    const mockEnv = (extra: Record<string, string> = {}) => ({ command: MOCK_PROFILE.command, env: { [HISTORY_DIR_ENV]: history, ...extra } })
    server = await startTestServer('sqlite', {
      logger: log.logger,
      env: {
        AGENT_PROFILES: JSON.stringify({
          mock: mockEnv(),
          'late-replay': mockEnv({ [REPLAY_ENV]: 'after' }),
          // Signs in with a key from its environment, as Codex does with OPENAI_API_KEY.
          'signs-in': mockEnv({ MOCK_AGENT_AUTH_ENV: 'MOCK_AGENT_API_KEY', MOCK_AGENT_API_KEY: 'k-123' }),
          'no-key': mockEnv({ MOCK_AGENT_AUTH_ENV: 'MOCK_AGENT_API_KEY', MOCK_AGENT_API_KEY: '' }),
          'dies-at-start': { command: [process.execPath, '-e', "console.error('fatal: model provider key is not set (ANTHROPIC_API_KEY)'); process.exit(3)"] },
        }),
      },
    })
    token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'dev' })).createUser.token
    workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: 'agents' })).createWorkspace.id
  })
  afterAll(async () => {
    await server?.close()
    rmSync(history, { recursive: true, force: true })
  })

  const gql = <R, V>(doc: Parameters<typeof ok<R, V>>[2], vars: V) => ok<R, V>(server.graphqlUrl, token, doc, ...([vars] as never))
  const newTask = async () => (await gql(CreateTaskDocument, { input: { workspaceId, title: 't' } })).createTask.id
  const start = async (taskId: string, agentProfile = 'mock') => (await gql(StartSessionDocument, { input: { taskId, agentProfile } })).startSession
  const send = (taskId: string, sessionId: string, content: string) =>
    gql(AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
  const detail = async (id: string) => (await gql(AgentSessionDetailDocument, { id, last: 1000 })).session!
  const summary = async (taskId: string) => {
    await server.projector.idle()
    return (await gql(TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!
  }
  const settled = (sessionId: string) =>
    eventually(async () => {
      const s = await detail(sessionId)
      return s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt) && s
    })

  describe('GIVEN the agent answers a prompt with a JSON-RPC error (the model provider refused)', () => {
    it('THEN the turn ends with the agent’s reason as agent_error and activeError, and the same agent takes the next prompt', async () => {
      const taskId = await newTask()
      const session = await start(taskId)
      const pid = server.sessions.runtime(session.id)!.agent.pid
      await send(taskId, session.id, script({ say: 'trying' }, { rpcError: { code: -32603, message: OVERLOADED } }))
      const failed = await settled(session.id)
      expect(failed.error).toMatchObject({ code: 'agent_error' })
      expect(failed.error!.message).toMatch(/^The model provider is overloaded: API Error: 529 .*overloaded_error/)
      expect(failed.turns.at(-1)).toMatchObject({ stopReason: 'error', interrupted: false })
      expect((await summary(taskId)).activeError).toMatchObject({
        sessionId: session.id,
        category: 'agent_error',
        preview: failed.error!.message,
        recoveryActions: ['RETRY_DEFAULT'],
      })

      await send(taskId, session.id, 'again')
      const answered = await eventually(async () => {
        const s = await settled(session.id)
        return s.messages.some((m) => m.content === 'echo: again') && s
      })
      // No relaunch: the same process answered, and the newer answer cleared the error.
      expect(server.sessions.runtime(session.id)!.agent.pid).toBe(pid)
      expect(answered.turns.filter((t) => t.lifecycleOnly)).toHaveLength(0)
      expect(answered.error).toBeNull()
    })

    it('THEN a rate limit says so in the preview, bounded to 512 bytes', async () => {
      const taskId = await newTask()
      const session = await start(taskId)
      const message = `429 rate_limit_error: ${'é'.repeat(600)}`
      await send(taskId, session.id, script({ rpcError: { code: -32603, message, data: { details: 'retry-after: 30' } } }))
      await settled(session.id)
      const preview = (await summary(taskId)).activeError!.preview
      expect(preview.startsWith('Rate limited by the model provider: 429 rate_limit_error')).toBe(true)
      expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(512)
      expect(Buffer.byteLength(preview)).toBeGreaterThan(500)
    })
  })

  describe('GIVEN a session whose agent replays its history on session/load', () => {
    const story = script(
      { say: `a reply of many chunks: ${'x'.repeat(700)}`, chunks: 700 },
      { tool: { title: 'Edit a.txt', kind: 'edit', detail: { content: [{ type: 'diff', path: '/w/a.txt', oldText: 'a', newText: 'b' }] } } },
      { think: 'done thinking', chunks: 3 },
      { say: 'all done ✓', chunks: 2 },
    )

    for (const profile of ['mock', 'late-replay']) {
      it(`WHEN it is resumed (${profile === 'mock' ? 'replay before the load answer' : 'replay after the load answer'}), THEN the transcript is unchanged and no subscriber sees the replay`, async () => {
        const taskId = await newTask()
        const session = await start(taskId, profile)
        await send(taskId, session.id, story)
        await send(taskId, session.id, 'second prompt')
        const before = await eventually(async () => {
          const s = await settled(session.id)
          return s.messages.some((m) => m.content === 'echo: second prompt') && s
        })
        await gql(StopSessionDocument, { id: session.id })

        const client = await wsClient(server.wsUrl, token)
        const events = wsSubscribe(client, SessionEventsDocument, { sessionId: session.id })
        await events.waitFor(1)
        const replayed = () => server.sessions.runtime(session.id)?.agent.replayedUpdatesDropped ?? 0
        const { acpSessionId } = await server.store.db.session.findUniqueOrThrow({ where: { id: session.id } })
        const recorded = readFileSync(path.join(history, `${acpSessionId}.jsonl`), 'utf8').trim().split('\n').length
        expect(recorded).toBeGreaterThan(HANDOFF_CAPACITY)
        await gql(ResumeSessionDocument, { id: session.id })
        // The whole replay (more updates than the handoff holds) arrived and was dropped.
        await eventually(() => replayed() === recorded)
        const after = await settled(session.id)

        const shape = (s: typeof before) => s.messages.map((m) => ({ id: m.id, kind: m.kind, content: m.content, status: m.status, version: m.version }))
        expect(shape(after)).toEqual(shape(before))
        expect(after.messages.filter((m) => m.status === 'IN_PROGRESS')).toEqual([])
        const added = events.events.filter((e) => ['MessageAdded', 'MessageUpdated'].includes(e.data?.sessionEvents.__typename ?? ''))
        expect(added).toEqual([])
        await events.dispose()
        await client.dispose()

        // The resumed agent then answers new prompts as new messages.
        await send(taskId, session.id, 'third prompt')
        const third = await eventually(async () => {
          const s = await settled(session.id)
          return s.messages.some((m) => m.content === 'echo: third prompt') && s
        })
        expect(third.messages).toHaveLength(before.messages.length + 2)
      })
    }
  })

  describe('GIVEN an agent that exits while it starts', () => {
    it('THEN startSession and the stored launch error carry its own words, CONFLICT (not BAD_USER_INPUT), logged at warn with the profile', async () => {
      const taskId = await newTask()
      const result = await http(server.graphqlUrl, token, StartSessionDocument, { input: { taskId, agentProfile: 'dies-at-start' } })
      expect(errorCodes(result)).toEqual(['CONFLICT'])
      const message = result.errors![0]!.message
      expect(message).toContain('Agent exited during initialize (code 3)')
      expect(message).toContain('fatal: model provider key is not set (ANTHROPIC_API_KEY)')
      expect((await summary(taskId)).activeError).toMatchObject({ sessionId: null, category: 'agent_start_failed' })
      expect((await summary(taskId)).activeError!.preview).toContain('ANTHROPIC_API_KEY')
      const warned = log.lines.find((l) => l.action === 'agent.launch_failed' && l.profile === 'dies-at-start')
      expect(warned).toMatchObject({ level: 40, category: 'agent_start_failed' })
    })
  })

  describe('GIVEN an agent that signs in with a key from its environment (an env_var auth method)', () => {
    it('THEN the server authenticates with it when the profile gives the key, and the session starts', async () => {
      const taskId = await newTask()
      const session = await start(taskId, 'signs-in')
      await send(taskId, session.id, 'hello')
      await eventually(async () => (await settled(session.id)).messages.some((m) => m.content === 'echo: hello'))
    })

    it('THEN without the key the launch fails with the agent’s own reason', async () => {
      const taskId = await newTask()
      const result = await http(server.graphqlUrl, token, StartSessionDocument, { input: { taskId, agentProfile: 'no-key' } })
      expect(errorCodes(result)).toEqual(['CONFLICT'])
      expect(result.errors![0]!.message).toBe('Agent refused session/new. — Authentication required')
    })
  })

  describe('GIVEN a permission request with the agent’s own options and the tool call it asks for', () => {
    it('THEN the options and detail are shown, only their ids are accepted, and "always" reaches the agent as chosen', async () => {
      const taskId = await newTask()
      const session = await start(taskId)
      const options = [
        { optionId: 'approved-for-session', name: 'Always allow edits', kind: 'allow_always' },
        { optionId: 'approved', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'abort', name: 'Reject', kind: 'reject_once' },
      ]
      const toolCall = {
        kind: 'edit',
        locations: [{ path: '/w/src/app.ts', line: 3 }],
        content: [{ type: 'diff', path: '/w/src/app.ts', oldText: 'const a = 1\n', newText: 'const a = 2\n' }],
        rawInput: { file_path: '/w/src/app.ts', old_string: 'const a = 1', new_string: 'const a = 2' },
      }
      await send(taskId, session.id, script({ permission: { title: 'Edit src/app.ts', options, toolCall, echo: true } }))
      const asking = await eventually(async () => {
        const s = await detail(session.id)
        return s.messages.find((m) => m.kind === 'PERMISSION_REQUEST' && m.status === 'PENDING')
      })
      expect(asking.permissionOptions).toEqual([
        { id: 'approved-for-session', name: 'Always allow edits', kind: 'ALLOW_ALWAYS' },
        { id: 'approved', name: 'Allow once', kind: 'ALLOW_ONCE' },
        { id: 'abort', name: 'Reject', kind: 'REJECT_ONCE' },
      ])
      expect(asking.toolCall).toEqual({
        kind: 'edit',
        locations: [{ path: '/w/src/app.ts', line: 3 }],
        diffs: [{ path: '/w/src/app.ts', oldText: 'const a = 1\n', newText: 'const a = 2\n' }],
        rawInput: JSON.stringify(toolCall.rawInput),
        truncated: false,
      })

      for (const wrong of ['allow', 'reject', 'APPROVED', '']) {
        const refused = await http(server.graphqlUrl, token, RespondToPermissionDocument, { sessionId: session.id, pendingId: asking.pendingId!, optionId: wrong })
        expect(errorCodes(refused)).toEqual(['BAD_USER_INPUT'])
      }
      expect((await detail(session.id)).messages.find((m) => m.id === asking.id)).toMatchObject({ status: 'PENDING', version: asking.version })

      const answered = await gql(RespondToPermissionDocument, { sessionId: session.id, pendingId: asking.pendingId!, optionId: 'approved-for-session' })
      expect(answered.respondToPermission.status).toBe('APPROVED')
      const done = await eventually(async () => {
        const s = await settled(session.id)
        return s.messages.some((m) => m.content === 'permission outcome: approved-for-session') && s
      })
      expect(done.messages.filter((m) => m.kind !== 'PERMISSION_REQUEST').every((m) => m.permissionOptions.length === 0)).toBe(true)
    })

    it('THEN a reject option whose id does not say so still reads REJECTED', async () => {
      const taskId = await newTask()
      const session = await start(taskId)
      const options = [
        { optionId: 'approved', name: 'Yes', kind: 'allow_once' },
        { optionId: 'abort', name: 'No, and tell Codex what to do differently', kind: 'reject_once' },
      ]
      await send(taskId, session.id, script({ permission: { title: 'Run npm test', options, toolCall: { kind: 'execute', rawInput: { command: ['npm', 'test'] } } } }))
      const asking = await eventually(async () => (await detail(session.id)).messages.find((m) => m.kind === 'PERMISSION_REQUEST' && m.status === 'PENDING'))
      expect(asking.toolCall).toMatchObject({ kind: 'execute', rawInput: '{"command":["npm","test"]}' })
      const answered = await gql(RespondToPermissionDocument, { sessionId: session.id, pendingId: asking.pendingId!, optionId: 'abort' })
      expect(answered.respondToPermission.status).toBe('REJECTED')
    })
  })

  describe('GIVEN tool calls, a plan and a mode change', () => {
    it('THEN tool detail follows tool_call_update, and the plan and mode are kept without moving the task summary', async () => {
      const taskId = await newTask()
      const session = await start(taskId)
      await send(taskId, session.id, 'warm up')
      await settled(session.id)
      const revision = (await summary(taskId)).revision

      const client = await wsClient(server.wsUrl, token)
      const events = wsSubscribe(client, SessionEventsDocument, { sessionId: session.id })
      await events.waitFor(1)
      // A plan and a mode change outside any turn (as agents publish them when a session loads).
      const runtime = server.sessions.runtime(session.id)!
      runtime.agent.handoff.push({
        type: 'update',
        notification: { sessionId: runtime.agent.acpSessionId, update: { sessionUpdate: 'current_mode_update', currentModeId: 'plan' } },
      })
      runtime.agent.handoff.push({
        type: 'update',
        notification: {
          sessionId: runtime.agent.acpSessionId,
          update: {
            sessionUpdate: 'plan',
            entries: [
              { content: 'Read the failing test', priority: 'high', status: 'completed' },
              { content: 'Fix the parser', priority: 'medium', status: 'in_progress' },
            ],
          },
        },
      })
      const published = await eventually(async () => {
        const s = await detail(session.id)
        return s.plan.length === 2 && s.currentModeId === 'plan' && s
      })
      expect(published.plan).toEqual([
        { content: 'Read the failing test', priority: 'HIGH', status: 'COMPLETED' },
        { content: 'Fix the parser', priority: 'MEDIUM', status: 'IN_PROGRESS' },
      ])
      // Each change reached the session's followers; the task summary did not move.
      await eventually(() => events.events.filter((e) => e.data?.sessionEvents.__typename === 'SessionStateChanged').length >= 2 && true)
      expect((await summary(taskId)).revision).toBe(revision)
      await events.dispose()
      await client.dispose()

      await send(
        taskId,
        session.id,
        script({
          tool: {
            title: 'Write notes.md',
            kind: 'edit',
            detail: { locations: [{ path: '/w/notes.md' }], rawInput: { file_path: '/w/notes.md' } },
            updateDetail: { content: [{ type: 'diff', path: '/w/notes.md', oldText: null, newText: '# Notes\n' }] },
          },
        }),
      )
      const done = await settled(session.id)
      const tool = done.messages.find((m) => m.kind === 'TOOL_CALL')!
      expect(tool).toMatchObject({ status: 'COMPLETED', content: 'Write notes.md' })
      expect(tool.toolCall).toEqual({
        kind: 'edit',
        locations: [{ path: '/w/notes.md', line: null }],
        diffs: [{ path: '/w/notes.md', oldText: null, newText: '# Notes\n' }],
        rawInput: '{"file_path":"/w/notes.md"}',
        truncated: false,
      })
      expect(done.messages.filter((m) => m.kind === 'MESSAGE').every((m) => m.toolCall === null)).toBe(true)
    })
  })
})
