// Codex as its users meet it through this server: Zed's ACP adapter (@zed-industries/codex-acp,
// its linux-x64 binary) run as a real child process, offline, against a local fake of the OpenAI
// Responses API (test/support/fake-providers/openai.ts), driven over GraphQL as the page drives it.
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { codexProfile, type CodexProfile } from '../support/reference-agents/codex.ts'
import { reply, startFakeOpenAi, type FakeOpenAi } from '../support/fake-providers/openai.ts'
import { StopSessionDocument } from '../generated/graphql.ts'
import { AGENT_DEADLINE_MS, realAgentServer, says, within, type RealAgentServer } from './harness.ts'

const TEXT = 'Grüße aus Zürich — café 5 €, 😀 and 👩‍💻.\nSecond line\n\nthird: "quoted" \\ backslash ✓'

describe('Codex (codex-acp 0.16.0) against a local OpenAI Responses API', { timeout: 4 * AGENT_DEADLINE_MS }, () => {
  let fake: FakeOpenAi
  let codex: CodexProfile
  let h: RealAgentServer

  beforeAll(async () => {
    fake = await startFakeOpenAi()
    codex = codexProfile(fake.url)
    h = await realAgentServer({ codex: { command: codex.command, env: codex.env } })
  }, 60_000)
  afterAll(async () => {
    await h?.close()
    await fake?.close()
    codex?.cleanup()
  })


  let story: { taskId: string; sessionId: string; repo: string }

  it('streams text with non-ASCII characters exactly, rebuilt byte for byte from the appends', async () => {
    const { taskId, repo } = await h.newTask({ 'hello.txt': 'line one\nline two\n' })
    const session = await h.start(taskId, 'codex')
    story = { taskId, sessionId: session.id, repo: repo.dir }
    fake.script(reply.text(TEXT, { deltas: 23 }))
    const stream = await h.follow(session.id)
    await h.send(taskId, session.id, 'Say hello.')
    const done = await h.settled(session.id, says(TEXT))
    const message = done.messages.find((m) => m.content === TEXT)!
    await within(() => stream.rebuilt().texts.get(message.id) === TEXT)
    expect(stream.rebuilt().gaps).toBe(0)
    await stream.close()
    expect(done.models.available.length).toBeGreaterThan(0)
  })

  it('asks permission for a patch with its diff and Codex’s own options; approving applies it', async () => {
    const { taskId, sessionId, repo } = story
    fake.script(
      reply.applyPatch('*** Begin Patch\n*** Update File: hello.txt\n@@\n line one\n-line two\n+line 2 é\n*** End Patch\n', { text: 'Editing.' }),
      reply.text('Edited hello.txt.'),
    )
    await h.send(taskId, sessionId, 'Edit hello.txt.')
    const asking = await h.pendingPermission(sessionId)
    expect(asking.permissionOptions.map((o) => [o.id, o.kind])).toEqual([
      ['approved', 'ALLOW_ONCE'],
      ['abort', 'REJECT_ONCE'],
    ])
    expect(asking.toolCall?.kind).toBe('edit')
    expect(asking.toolCall?.diffs).toHaveLength(1)
    expect(asking.toolCall!.diffs[0]!.path).toBe(path.join(repo, 'hello.txt'))
    expect(asking.toolCall!.diffs[0]!.newText).toContain('line 2 é')

    expect((await h.answer(sessionId, asking.pendingId!, 'approved')).respondToPermission.status).toBe('APPROVED')
    await h.settled(sessionId, says('Edited hello.txt.'))
    expect(readFileSync(path.join(repo, 'hello.txt'), 'utf8')).toBe('line one\nline 2 é\n')
  })

  it('shows the command of a shell permission with its "always" option; a rejection runs nothing', async () => {
    const { taskId, sessionId, repo } = story
    fake.script(reply.exec('touch rejected.txt', { text: 'Running.' }))
    await h.send(taskId, sessionId, 'Create rejected.txt.')
    const asking = await h.pendingPermission(sessionId)
    expect(asking.permissionOptions.map((o) => [o.id, o.kind])).toEqual([
      ['approved', 'ALLOW_ONCE'],
      ['approved-execpolicy-amendment', 'ALLOW_ALWAYS'],
      ['abort', 'REJECT_ONCE'],
    ])
    expect(asking.toolCall?.kind).toBe('execute')
    expect(asking.toolCall!.rawInput).toContain('touch rejected.txt')

    expect((await h.answer(sessionId, asking.pendingId!, 'abort')).respondToPermission.status).toBe('REJECTED')
    // Codex ends the whole turn on a rejection (it answers the prompt "cancelled").
    const done = await h.settled(sessionId)
    expect(done.turns.at(-1)).toMatchObject({ stopReason: 'cancelled' })
    expect(existsSync(path.join(repo, 'rejected.txt'))).toBe(false)
  })

  it('resumes with the transcript unchanged: the replay stores nothing, reaches no subscriber, and the model keeps its context', async () => {
    const { taskId, sessionId } = story
    const before = await h.resumeChangesNothing(sessionId)

    fake.script(reply.text('You asked me to edit hello.txt.'))
    await h.send(taskId, sessionId, 'What did I ask you to edit?')
    const done = await h.settled(sessionId, says('You asked me to edit hello.txt.'))
    expect(done.messages).toHaveLength(before.messages.length + 2)
    const history = JSON.stringify(fake.mainRequests().at(-1)!.body)
    expect(history).toContain('Say hello.')
    expect(history).toContain('Edit hello.txt.')
  })

  for (const [name, error, preview] of [
    ['401 (a bad key)', reply.unauthorized(), /401 Unauthorized/],
    ['429 (rate limit, retry-after)', reply.rateLimited(30), /^Rate limited by the model provider: .*429/],
    ['503 (overloaded)', reply.overloaded(503), /503 Service Unavailable/],
  ] as const) {
    it(`shows a provider ${name} as the agent's error, not a crash; the same agent answers the next prompt`, async () => {
      const { taskId } = await h.newTask()
      const session = await h.start(taskId, 'codex')
      const pid = h.pidOf(session.id)!
      fake.script(error)
      await h.send(taskId, session.id, 'Hello?')
      const failed = await h.settled(session.id, (s) => s.error !== null)
      expect(failed.error!.code).toBe('agent_error')
      expect(failed.error!.message).toMatch(preview)
      expect(await h.summary(taskId)).toMatchObject({ activeError: { category: 'agent_error', preview: failed.error!.message, recoveryActions: ['RETRY_DEFAULT'] } })

      fake.script(reply.text('Back again.'))
      await h.send(taskId, session.id, 'Try again.')
      const next = await h.settled(session.id, says('Back again.'))
      expect(h.pidOf(session.id)).toBe(pid)
      expect(next.turns.filter((t) => t.lifecycleOnly)).toEqual([])
      // The newer answer clears the error.
      expect(next.error).toBeNull()
      expect((await h.summary(taskId)).activeError).toBeNull()
    })
  }

  it('stops a slow stream mid-way: the turn ends interrupted, the agent lets go of the model’s stream', async () => {
    const { taskId } = await h.newTask()
    const session = await h.start(taskId, 'codex')
    const long = 'slow words '.repeat(200)
    const index = fake.mainRequests().length
    fake.script(reply.slow(long, { delayMs: 50 }))
    await h.send(taskId, session.id, 'Tell me a long story.')
    await h.message(session.id, (m) => m.kind === 'MESSAGE' && m.author === 'AGENT' && m.content.length > 0)
    const request = await fake.waitForMainRequest(index, AGENT_DEADLINE_MS)
    expect((await h.gql(StopSessionDocument, { id: session.id })).stopSession.state).toBe('CANCELLED')
    await fake.waitForDisconnect(request, AGENT_DEADLINE_MS)
    const after = await h.detail(session.id)
    const partial = after.messages.find((m) => m.kind === 'MESSAGE' && m.author === 'AGENT')!
    expect(partial.status).toBe('INTERRUPTED')
    expect(long.startsWith(partial.content)).toBe(true)
    expect(after.turns.at(-1)).toMatchObject({ interrupted: true })
  })
})
