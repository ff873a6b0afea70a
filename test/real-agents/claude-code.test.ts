// Claude Code as its users meet it through this server: Zed's ACP adapter
// (@zed-industries/claude-agent-acp, the Claude Code CLI inside it) run as a real child process,
// offline, against a local fake of the Anthropic Messages API (test/support/fake-providers/anthropic.ts),
// driven over GraphQL as the page drives it (MAPPING "Real agents").
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { claudeProfile, type ClaudeProfile } from '../support/reference-agents/claude.ts'
import {
  authenticationError,
  overloadedError,
  rateLimitError,
  startFakeAnthropic,
  textReply,
  toolUseReply,
  type FakeAnthropic,
} from '../support/fake-providers/anthropic.ts'
import { errorCodes, http } from '../support/client.ts'
import { RespondToPermissionDocument, StartSessionDocument, StopSessionDocument } from '../generated/graphql.ts'
import { AGENT_DEADLINE_MS, realAgentServer, says, within, type RealAgentServer } from './harness.ts'

const TEXT = 'Grüße aus Zürich — café 5 €, 😀 and 👩‍💻.\nSecond line\n\nthird: "quoted" \\ backslash\tand tab ✓'
const CLAUDE_OPTIONS = [
  { id: 'allow_always', name: 'Always Allow', kind: 'ALLOW_ALWAYS' },
  { id: 'allow', name: 'Allow', kind: 'ALLOW_ONCE' },
  { id: 'reject', name: 'Reject', kind: 'REJECT_ONCE' },
]

describe('Claude Code (claude-agent-acp 0.23.1) against a local Anthropic API', { timeout: 4 * AGENT_DEADLINE_MS }, () => {
  let fake: FakeAnthropic
  let claude: ClaudeProfile
  let h: RealAgentServer

  beforeAll(async () => {
    fake = await startFakeAnthropic()
    claude = claudeProfile(fake.url)
    h = await realAgentServer({
      claude: claude.profile,
      // What machines that export IS_SANDBOX=yes give the adapter when they run it as root.
      'claude-sandboxed': { ...claude.profile, env: { ...claude.profile.env, IS_SANDBOX: 'yes' } },
    })
  }, 60_000)
  afterAll(async () => {
    await h?.close()
    await fake?.close()
    claude?.cleanup()
  })


  // One session walks the story a user meets; the resume at the end must leave all of it as it was.
  let story: { taskId: string; sessionId: string; repo: string }

  it('streams text with non-ASCII characters exactly, rebuilt byte for byte from the appends', async () => {
    const { taskId, repo } = await h.newTask()
    const session = await h.start(taskId, 'claude')
    expect(session.state).toBe('WAITING_FOR_INPUT')
    story = { taskId, sessionId: session.id, repo: repo.dir }
    // Deltas of 1 to 7 code points: boundaries fall right beside multi-byte characters and inside ZWJ sequences.
    fake.when('[greet]', textReply(TEXT, { chunkSize: [1, 2, 3, 5, 7] }))
    const stream = await h.follow(session.id)
    await h.send(taskId, session.id, '[greet] Say hello.')
    const done = await h.settled(session.id, says(TEXT))
    const reply = done.messages.find((m) => m.content === TEXT)!
    expect(reply.status).toBe('COMPLETED')
    await within(() => stream.rebuilt().texts.get(reply.id) === TEXT)
    expect(stream.rebuilt().gaps).toBe(0)
    await stream.close()
    expect(done.models.available.length).toBeGreaterThan(0)
    expect(done.models.currentModelId).not.toBeNull()
    expect(done.currentModeId).toBe('default')
  })

  it('asks permission for a file write with its diff and the agent’s own options; "Always Allow" goes through as chosen', async () => {
    const { taskId, sessionId, repo } = story
    const file = path.join(repo, 'notes.md')
    fake.when('[write]', toolUseReply('Write', { file_path: file, content: '# Notes\nÉtape 1 ✓\n' }), textReply('Wrote notes.md.'))
    await h.send(taskId, sessionId, '[write] Write notes.md.')
    const asking = await h.pendingPermission(sessionId)
    expect(asking.permissionOptions).toEqual(CLAUDE_OPTIONS)
    expect(asking.toolCall).toMatchObject({
      kind: 'edit',
      locations: [{ path: file }],
      diffs: [{ path: file, oldText: null, newText: '# Notes\nÉtape 1 ✓\n' }],
      truncated: false,
    })
    expect(JSON.parse(asking.toolCall!.rawInput!)).toMatchObject({ file_path: file })
    expect(await h.summary(taskId)).toMatchObject({ pendingAction: 'PERMISSION' })

    const approved = await h.answer(sessionId, asking.pendingId!, 'allow_always')
    expect(approved.respondToPermission.status).toBe('APPROVED')
    const done = await h.settled(sessionId, says('Wrote notes.md.'))
    expect(readFileSync(file, 'utf8')).toBe('# Notes\nÉtape 1 ✓\n')
    const tool = done.messages.filter((m) => m.kind === 'TOOL_CALL').at(-1)!
    expect(tool.status).toBe('COMPLETED')
    expect(tool.toolCall?.diffs).toEqual([{ path: file, oldText: null, newText: '# Notes\nÉtape 1 ✓\n' }])
    expect(await h.summary(taskId)).toMatchObject({ pendingAction: null })
  })

  it('shows the command of a shell permission; a rejection reaches the agent, which goes on without running it', async () => {
    const { taskId, sessionId, repo } = story
    // A command no permission mode allows by itself (acceptEdits, which "Always Allow" on an edit
    // switches to, lets file commands such as touch through unasked).
    const command = `node -e "require('fs').writeFileSync('made-by-bash.txt', 'x')"`
    fake.when('[shell]', toolUseReply('Bash', { command, description: 'Create a marker file' }), textReply('Understood, I did not run it.'))
    await h.send(taskId, sessionId, '[shell] Create the marker file.')
    const asking = await h.pendingPermission(sessionId)
    expect(asking.permissionOptions.map((o) => o.id)).toEqual(CLAUDE_OPTIONS.map((o) => o.id))
    expect(asking.toolCall?.kind).toBe('execute')
    expect(JSON.parse(asking.toolCall!.rawInput!)).toMatchObject({ command })

    const refused = await http(h.server.graphqlUrl, h.token, RespondToPermissionDocument, { sessionId, pendingId: asking.pendingId!, optionId: 'allow_once' })
    expect(errorCodes(refused)).toEqual(['BAD_USER_INPUT'])
    const rejected = await h.answer(sessionId, asking.pendingId!, 'reject')
    expect(rejected.respondToPermission.status).toBe('REJECTED')
    const done = await h.settled(sessionId, says('Understood, I did not run it.'))
    expect(existsSync(path.join(repo, 'made-by-bash.txt'))).toBe(false)
    expect(done.messages.filter((m) => m.kind === 'TOOL_CALL').at(-1)!.status).toBe('FAILED')
    // The model was told: its last request carries the refused tool's result.
    expect(JSON.stringify(fake.mainRequests().at(-1)!.messages)).toContain('tool_result')
  })

  it('keeps the plan the agent publishes (its todo list), replaced whole, without moving the task summary', async () => {
    const { taskId, sessionId } = story
    const todos = [
      { content: 'Read the notes', status: 'completed', activeForm: 'Reading the notes' },
      { content: 'Fix the parser', status: 'in_progress', activeForm: 'Fixing the parser' },
      { content: 'Run the tests', status: 'pending', activeForm: 'Running the tests' },
    ]
    fake.when('[plan]', toolUseReply('TodoWrite', { todos }), textReply('Planned.'))
    await h.send(taskId, sessionId, '[plan] Plan the work.')
    const done = await h.settled(sessionId, says('Planned.'))
    expect(done.plan).toEqual([
      { content: 'Read the notes', priority: 'MEDIUM', status: 'COMPLETED' },
      { content: 'Fix the parser', priority: 'MEDIUM', status: 'IN_PROGRESS' },
      { content: 'Run the tests', priority: 'MEDIUM', status: 'PENDING' },
    ])
  })

  it('resumes with the transcript unchanged: the replay stores nothing, reaches no subscriber, and the model keeps its context', async () => {
    const { taskId, sessionId } = story
    const before = await h.resumeChangesNothing(sessionId)

    fake.when('[recall]', textReply('You asked me to write notes.md.'))
    await h.send(taskId, sessionId, '[recall] What did I ask you to write?')
    const done = await h.settled(sessionId, says('You asked me to write notes.md.'))
    expect(done.messages).toHaveLength(before.messages.length + 2)
    const history = JSON.stringify(fake.mainRequests().at(-1)!.messages)
    expect(history).toContain('[greet] Say hello.')
    expect(history).toContain('[write] Write notes.md.')
  })

  for (const [name, error, preview] of [
    ['401 (a bad key)', authenticationError(), /Invalid API key/],
    ['429 (rate limit, retry-after)', rateLimitError(30), /^Rate limited by the model provider: .*429/],
    ['529 (overloaded)', overloadedError(), /^The model provider is overloaded: .*529/],
  ] as const) {
    it(`shows a provider ${name} as the agent's error, not a crash; the agent lives on and takes the next prompt`, async () => {
      const { taskId } = await h.newTask()
      const session = await h.start(taskId, 'claude')
      const pid = h.pidOf(session.id)!
      const marker = `[fail-${error.status}]`
      fake.when(marker, error)
      await h.send(taskId, session.id, `${marker} Hello?`)
      const failed = await h.settled(session.id, (s) => s.error !== null)
      expect(failed.error!.code).toBe('agent_error')
      expect(failed.error!.message).toMatch(preview)
      expect(await h.summary(taskId)).toMatchObject({
        primarySession: { id: session.id, state: 'WAITING_FOR_INPUT' },
        activeError: { category: 'agent_error', preview: failed.error!.message, recoveryActions: ['RETRY_DEFAULT'] },
      })
      expect(() => process.kill(pid, 0)).not.toThrow()

      await h.send(taskId, session.id, 'Try again.')
      const next = await h.settled(session.id, (s) => s.turns.filter((t) => !t.lifecycleOnly).length === 2)
      // The same process answered: no relaunch, no crash.
      expect(h.pidOf(session.id)).toBe(pid)
      expect(next.turns.filter((t) => t.lifecycleOnly)).toEqual([])
      expect(next.turns.at(-1)).toMatchObject({ interrupted: false })
      expect(next.state).toBe('WAITING_FOR_INPUT')
    })
  }

  it('stops a slow stream mid-way: the turn ends interrupted, the agent lets go of the model’s stream', async () => {
    const { taskId } = await h.newTask()
    const session = await h.start(taskId, 'claude')
    const long = 'slow words '.repeat(400)
    fake.when('[slow]', textReply(long, { chunkSize: 11, delayMs: 50 }))
    await h.send(taskId, session.id, '[slow] Tell me a long story.')
    await h.message(session.id, (m) => m.kind === 'MESSAGE' && m.author === 'AGENT' && m.content.length > 0)
    const request = await fake.waitForRequest((r) => r.kind === 'main' && r.userText.includes('[slow]'), AGENT_DEADLINE_MS)
    const stopped = await h.gql(StopSessionDocument, { id: session.id })
    expect(stopped.stopSession.state).toBe('CANCELLED')
    expect(await request.settled).toBe('disconnected')
    const after = await h.detail(session.id)
    const partial = after.messages.find((m) => m.kind === 'MESSAGE' && m.author === 'AGENT')!
    expect(partial.status).toBe('INTERRUPTED')
    expect(long.startsWith(partial.content)).toBe(true)
    expect(partial.content.length).toBeLessThan(long.length)
    expect(after.turns.at(-1)).toMatchObject({ interrupted: true })
  })

  it.runIf(process.getuid?.() === 0)('a launch the agent refuses says why in its own words (IS_SANDBOX=yes as root), not BAD_USER_INPUT', async () => {
    const { taskId } = await h.newTask()
    const result = await http(h.server.graphqlUrl, h.token, StartSessionDocument, { input: { taskId, agentProfile: 'claude-sandboxed' } })
    expect(errorCodes(result)).toEqual(['CONFLICT'])
    expect(result.errors![0]!.message).toMatch(/^Agent (refused session\/new|exited during session\/new)/)
    expect(result.errors![0]!.message).toContain('Query closed before response received')
    const summary = await h.summary(taskId)
    expect(summary.activeError).toMatchObject({ sessionId: null, category: 'agent_start_failed' })
    expect(summary.activeError!.preview).toContain('Query closed before response received')
    expect(h.log.lines.find((l) => l.action === 'agent.launch_failed' && l.profile === 'claude-sandboxed')).toBeDefined()
  })
})
