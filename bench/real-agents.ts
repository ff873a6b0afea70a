// `npm run bench:agents`: the real agents (Claude Code through Zed's claude-agent-acp, Codex through
// codex-acp, both installed in test/reference-agents) as the page meets them through this server,
// offline against the local provider fakes of the real-agent tests, beside the built-in `mock`
// agent measured in the same run:
//   1. start and resume time: the wall time of startSession / resumeSession (on a stopped session
//      with one answered prompt) until it answers and the session is WAITING_FOR_INPUT;
//   2. a ~1 MiB streamed answer (mixed text: é € 😀 tabs, quotes, newlines; tens of thousands of
//      deltas) rebuilt from the appends a graphql-ws subscriber receives and compared byte for
//      byte with what the provider sent and with the stored message;
//   3. the TaskStatusSummaryUpdated events a workspaceEvents subscriber receives for one turn of
//      the same story on each agent (a file write that asks permission, allowed, then a text answer).
// Loopback only (server, fakes, agents' providers); every wait has a deadline and the whole run one
// more (BENCH_AGENTS_DEADLINE_MS). The table is printed and written to /tmp/real-agents-bench.md
// (BENCH_AGENTS_OUT). BENCH_AGENTS_SAMPLES (default 5) samples per agent after one warm-up round;
// BENCH_AGENTS=claude (or codex, or both, comma-separated) runs a subset beside the mock.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { print } from 'graphql'
import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import type { Client } from 'graphql-ws'
import { pino } from 'pino'
import { dropScript, SCRIPTS_DIR_ENV } from '../src/agents/mock/script-drop.ts'
import { HISTORY_DIR_ENV } from '../src/agents/mock/session-history.ts'
import { startTestServer, type TestServer } from '../test/support/server.ts'
import { gitRepo } from '../test/support/git-repo.ts'
import { claudeProfile } from '../test/support/reference-agents/claude.ts'
import { codexProfile } from '../test/support/reference-agents/codex.ts'
import { splitText as anthropicSplit, startFakeAnthropic, textReply, toolUseReply } from '../test/support/fake-providers/anthropic.ts'
import { reply, startFakeOpenAi } from '../test/support/fake-providers/openai.ts'
import {
  AddMessageDocument,
  AgentSessionDetailDocument,
  AgentStreamDocument,
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  ResumeSessionDocument,
  RespondToPermissionDocument,
  SessionMessageDocument,
  StartSessionDocument,
  StopSessionDocument,
  TaskStatusSummariesDocument,
  UpdateTaskDocument,
} from '../test/generated/graphql.ts'
import { countingClient } from './support.ts'
import { rebuildFromAppends, type StreamEvent } from '../test/support/append-rebuild.ts'
import {
  AGENTS,
  errorText,
  exits,
  failures,
  ms,
  oddities,
  OUT,
  render,
  resumes,
  RUN_DEADLINE_MS,
  SAMPLES,
  starts,
  stories,
  STREAM_WAIT_MS,
  streams,
  WAIT_MS,
  warnings,
  type AgentName,
  type StoryResult,
  type StreamResult,
  type Timing,
} from './real-agents-results.ts'
import { mixedText, mockChunks, SESSION_STATE, until, withDeadline, WORKSPACE_EVENTS, type SessionState, type Summary } from './real-agents-support.ts'

// --- Setup ---

const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-agents-bench-'))
// The built-in mock keeps its sessions' history (so a resume replays it, as the real agents do) and
// takes scripts left for a prompt (a 1 MiB answer cannot travel in a 256 KiB prompt): both are
// switched on through its environment, which it inherits from the server.
process.env[HISTORY_DIR_ENV] = path.join(dir, 'mock-history')
process.env[SCRIPTS_DIR_ENV] = path.join(dir, 'mock-scripts')

const logger = pino(
  { level: 'warn' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        warnings.push(JSON.parse(String(chunk)) as { level: number; action?: string; msg?: string })
      } catch {
        // not JSON: ignored
      }
      done()
    },
  }),
)

const anthropic = await startFakeAnthropic()
const openai = await startFakeOpenAi()
const claude = claudeProfile(anthropic.url)
const codex = codexProfile(openai.url)
let server: TestServer | undefined
const repos: string[] = []
const clients: Client[] = []

function finish(code: number): never {
  const text = render()
  console.info(`\n${text}`)
  writeFileSync(OUT, `${text}\n`)
  console.info(`(written to ${OUT})`)
  process.exit(code)
}

const runDeadline = setTimeout(() => {
  oddities.push(`the run hit its deadline (${RUN_DEADLINE_MS} ms) and was cut short`)
  finish(2)
}, RUN_DEADLINE_MS)

try {
  server = await startTestServer('sqlite', {
    databaseUrl: `file:${path.join(dir, 'app.db')}`,
    skipMigrations: false,
    logger,
    env: { AGENT_PROFILES: JSON.stringify({ claude: claude.profile, codex: { command: codex.command, env: codex.env } }) },
  })
  const s = server

  async function gql<R, V>(document: TypedDocumentNode<R, V> | string, variables: V, token: string, timeoutMs = WAIT_MS): Promise<R> {
    const response = await fetch(s.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: typeof document === 'string' ? document : print(document), variables }),
      signal: AbortSignal.timeout(timeoutMs),
    })
    const body = (await response.json()) as { data?: R | null; errors?: { message: string }[] }
    if (body.errors?.length || !body.data) throw new Error(`GraphQL: ${JSON.stringify(body.errors).slice(0, 400)}`)
    return body.data
  }

  const token = (await gql(CreateUserDocument, { name: 'bench' }, s.adminToken)).createUser.token
  const workspaceId = (await gql(CreateWorkspaceDocument, { name: 'real agents bench' }, token)).createWorkspace.id
  const q = <R, V>(document: TypedDocumentNode<R, V> | string, variables: V, timeoutMs?: number) => gql(document, variables, token, timeoutMs)

  const newTask = async (files: Record<string, string> = { 'README.md': 'hello\n' }) => {
    const repo = gitRepo(files)
    repos.push(repo.dir)
    const taskId = (await q(CreateTaskDocument, { input: { workspaceId, title: 'bench', repositories: [{ name: 'acme/app', localPath: repo.dir }] } })).createTask.id
    return { taskId, repo: repo.dir }
  }
  const state = async (id: string) => (await q<SessionState, { id: string }>(SESSION_STATE, { id })).session
  const conversational = (st: SessionState['session']) => st.turns.filter((t) => !t.lifecycleOnly).length
  /** No turn in flight, waiting for input, and at least `turns` conversational turns. */
  const settled = (id: string, turns: number, ms = WAIT_MS, every = 50) =>
    until(`session ${id} settled after ${turns} turns`, async () => {
      const st = await state(id)
      if (st.state === 'FAILED') throw new Error(`session failed: ${st.error?.message ?? '?'}`)
      return st.state === 'WAITING_FOR_INPUT' && st.turns.every((t) => t.completedAt) && conversational(st) >= turns && st
    }, ms, every)
  const detail = async (id: string) => (await q(AgentSessionDetailDocument, { id, last: 200 })).session!
  const send = (taskId: string, sessionId: string, content: string) => q(AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content } })
  /** stopSession, then until the agent's whole process group is gone (a teardown must not weigh on the next sample): its state and that wait. */
  const stop = async (id: string) => {
    const pid = s.sessions.runtime(id)?.agent.pid
    const answered = (await q(StopSessionDocument, { id })).stopSession.state
    const t0 = performance.now()
    if (pid)
      await until(`agent group ${pid} gone`, () => {
        try {
          process.kill(-pid, 0)
          return false
        } catch {
          return true
        }
      }, 15_000, 10).catch(() => oddities.push(`the agent of session ${id} (process group ${pid}) was still running 15 s after stopSession`))
    return { state: answered, exitMs: performance.now() - t0 }
  }

  /** A mutation timed as the page sees it: until its answer, and until the session is WAITING_FOR_INPUT (polled when the answer said otherwise). */
  async function timed(what: string, run: () => Promise<{ id: string; state: string }>): Promise<Timing & { id: string }> {
    const t0 = performance.now()
    const answer = await run()
    const answerMs = performance.now() - t0
    let waitingMs = answerMs
    if (answer.state !== 'WAITING_FOR_INPUT') {
      await until(`${what} WAITING_FOR_INPUT`, async () => (await state(answer.id)).state === 'WAITING_FOR_INPUT', WAIT_MS, 5)
      waitingMs = performance.now() - t0
    }
    return { id: answer.id, answerMs, waitingMs, answeredState: answer.state }
  }

  // --- 1. Start and resume ---

  let hello = 0
  async function startResumeSample(agent: AgentName, record: boolean) {
    const { taskId } = await newTask()
    const started = await timed(`${agent} start`, async () => (await q(StartSessionDocument, { input: { taskId, agentProfile: agent } })).startSession)
    // One answered prompt: the short history a resume loads.
    const marker = `[hello-${++hello}]`
    if (agent === 'claude') anthropic.when(marker, textReply('Hello there.'))
    if (agent === 'codex') openai.script(reply.text('Hello there.'))
    await send(taskId, started.id, `${marker} Say hello.`)
    await settled(started.id, 1)
    const stopped = await stop(started.id)
    if (stopped.state !== 'CANCELLED') oddities.push(`${agent}: stopSession answered ${stopped.state}, not CANCELLED`)
    const resumed = await timed(`${agent} resume`, async () => (await q(ResumeSessionDocument, { id: started.id })).resumeSession)
    await settled(started.id, 1)
    const replayDropped = s.sessions.runtime(started.id)?.agent.replayedUpdatesDropped ?? -1
    const again = await stop(started.id)
    if (record) {
      starts[agent].push(started)
      resumes[agent].push({ ...resumed, replayDropped })
      exits[agent].push(stopped.exitMs, again.exitMs)
      for (const [t, kind] of [
        [started, 'startSession'],
        [resumed, 'resumeSession'],
      ] as const)
        if (t.answeredState !== 'WAITING_FOR_INPUT') oddities.push(`${agent}: ${kind} answered ${t.answeredState}; WAITING_FOR_INPUT came ${ms(t.waitingMs - t.answerMs)} ms later`)
    }
  }

  console.info(`1. start/resume: 1 warm-up + ${SAMPLES} samples per agent, interleaved…`)
  const broken = new Set<AgentName>()
  for (let round = 0; round <= SAMPLES; round++) {
    for (const agent of AGENTS) {
      if (broken.has(agent)) continue
      try {
        await startResumeSample(agent, round > 0)
        const last = round > 0 ? `start ${ms(starts[agent].at(-1)!.waitingMs)} ms, resume ${ms(resumes[agent].at(-1)!.waitingMs)} ms` : 'warm-up'
        console.info(`   round ${round} ${agent}: ${last}`)
      } catch (error) {
        failures[agent].push(`round ${round}: ${errorText(error)}`)
        console.info(`   round ${round} ${agent}: FAILED ${errorText(error)}`)
        if (failures[agent].length >= 2) broken.add(agent)
      }
    }
  }

  // --- 2. A 1 MiB streamed answer ---

  const { text: BIG, lines: BIG_LINES } = mixedText(1024 * 1024)
  const CLAUDE_SIZES = [1, 2, 3, 5, 7, 11, 16, 23, 31, 47, 64, 97]
  const claudeDeltas = anthropicSplit(BIG, CLAUDE_SIZES).length

  /** Follows a session's stream as the SDK does, with each event's arrival time. */
  async function follow(sessionId: string) {
    const { client, tally } = countingClient(s.wsUrl, token)
    clients.push(client)
    const events: { at: number; data: Record<string, unknown> }[] = []
    let failure: unknown
    const dispose = client.subscribe(
      { query: print(AgentStreamDocument), variables: { sessionId } },
      { next: (value) => events.push({ at: performance.now(), data: value.data as Record<string, unknown> }), error: (e) => (failure = e), complete: () => undefined },
    )
    await until('AgentStream SessionJoined', () => {
      if (failure) throw new Error(`AgentStream: ${JSON.stringify(failure).slice(0, 200)}`)
      return events.length > 0
    })
    return {
      events,
      tally,
      rebuilt() {
        // The agent's answer only (not the prompt's MessageAdded); appends to anything else are not counted.
        return rebuildFromAppends(
          events.map(({ at, data }) => ({ at, event: data.sessionEvents as StreamEvent })),
          (m) => m.author === 'AGENT' && m.kind === 'MESSAGE',
        )
      },
      async close() {
        dispose()
        await client.dispose()
      },
    }
  }

  async function bigStream(agent: AgentName): Promise<StreamResult> {
    const { taskId } = await newTask()
    const session = (await q(StartSessionDocument, { input: { taskId, agentProfile: agent } })).startSession
    await until(`${agent} waiting`, async () => (await state(session.id)).state === 'WAITING_FOR_INPUT')
    const stream = await follow(session.id)
    try {
      return await bigTurn(agent, taskId, session.id, stream)
    } finally {
      await stream.close().catch(() => undefined)
      await stop(session.id).catch(() => undefined)
    }
  }

  async function bigTurn(agent: AgentName, taskId: string, sessionId: string, stream: Awaited<ReturnType<typeof follow>>): Promise<StreamResult> {
    const session = { id: sessionId }
    const prompt = '[big] Write the long text.'
    let deltas: number
    if (agent === 'mock') {
      deltas = mockChunks(BIG, BIG_LINES, claudeDeltas)
      dropScript(process.env[SCRIPTS_DIR_ENV]!, session.id, prompt, [{ say: BIG, chunks: deltas }])
    } else if (agent === 'claude') {
      deltas = claudeDeltas
      anthropic.when('[big]', textReply(BIG, { chunkSize: CLAUDE_SIZES }))
    } else {
      deltas = claudeDeltas
      openai.script(reply.text(BIG, { deltas }))
    }
    const framesBefore = stream.tally.frames
    const bytesBefore = stream.tally.bytes
    const t0 = performance.now()
    await send(taskId, session.id, prompt)
    const ended = await settled(session.id, 1, STREAM_WAIT_MS, 100)
    const turnEnd = performance.now() - t0
    const turn = ended.turns.filter((t) => !t.lifecycleOnly).at(-1)
    // The last appends may still be on their way to the subscriber: until its text stops growing (or is whole).
    let lastLength = -1
    let steadySince = performance.now()
    await until(`${agent} subscriber caught up`, () => {
      const longest = Math.max(0, ...[...stream.rebuilt().texts.values()].map((t) => t.length))
      if (longest >= BIG.length) return true
      if (longest !== lastLength) {
        lastLength = longest
        steadySince = performance.now()
      }
      return performance.now() - steadySince > 3000
    }, WAIT_MS, 50)
    const { texts, appends, gaps } = stream.rebuilt()
    const wireFrames = stream.tally.frames - framesBefore
    const wireBytes = stream.tally.bytes - bytesBefore
    const ids = [...texts.keys()]
    const mainId = ids.sort((a, b) => texts.get(b)!.length - texts.get(a)!.length)[0]
    const rebuilt = ids.length === 1 ? texts.get(ids[0]!)! : [...texts.values()].join('')
    const stored = mainId ? (await q(SessionMessageDocument, { sessionId: session.id, id: mainId })).session?.message?.content : undefined
    const a = mainId ? appends.get(mainId) : undefined
    let note: string | undefined
    const notes = ids.length !== 1 ? [`the answer arrived as ${ids.length} agent messages`] : []
    if (rebuilt !== BIG) {
      let at = 0
      while (at < rebuilt.length && rebuilt[at] === BIG[at]) at++
      notes.push(`rebuilt text differs from the sent one (${rebuilt.length} of ${BIG.length} UTF-16 units, first difference at unit ${at})`)
    }
    if (turn?.stopReason !== 'end_turn' || ended.error) notes.push(`the turn ended ${turn?.stopReason ?? '?'}${ended.error ? ` with the error "${ended.error.message}"` : ''}`)
    if (notes.length) note = notes.join('; ')
    return {
      bytes: Buffer.byteLength(BIG),
      codePoints: Array.from(BIG).length,
      deltas,
      appends: [...appends.values()].reduce((n, x) => n + x.count, 0),
      messages: ids.length,
      wireFrames,
      wireBytes,
      gaps,
      rebuiltExact: rebuilt === BIG && gaps === 0,
      storedExact: stored === BIG,
      firstAppendMs: a ? a.first - t0 : NaN,
      lastAppendMs: a ? a.last - t0 : NaN,
      turnEndMs: turnEnd,
      note,
    }
  }

  console.info(`2. ~1 MiB streamed answer (${Buffer.byteLength(BIG)} bytes)…`)
  for (const agent of AGENTS) {
    try {
      const r = await bigStream(agent)
      streams[agent] = r
      console.info(`   ${agent}: ${r.appends} appends, exact ${r.rebuiltExact}/${r.storedExact}, last append ${ms(r.lastAppendMs)} ms`)
    } catch (error) {
      streams[agent] = { error: errorText(error) }
      console.info(`   ${agent}: FAILED ${errorText(error)}`)
    }
  }

  // --- 3. Summary revisions of one permission turn ---

  const NOTES = '# Notes\nÉtape 1 ✓\n'
  async function story(agent: AgentName): Promise<StoryResult> {
    const { client } = countingClient(s.wsUrl, token)
    clients.push(client)
    const events: { __typename: string; taskId?: string; task?: { id: string }; summary?: Summary }[] = []
    let failure: unknown
    const dispose = client.subscribe(
      { query: WORKSPACE_EVENTS, variables: { workspaceId } },
      { next: (v) => events.push((v.data as { workspaceEvents: (typeof events)[number] }).workspaceEvents), error: (e) => (failure = e), complete: () => undefined },
    )
    try {
      // The subscriber is live once it sees a change of the task it is about to watch (the
      // subscription is set up after the socket's handshake: the first changes may come before it).
      const { taskId, repo } = await newTask()
      for (let attempt = 1; ; attempt++) {
        const seen = events.length
        await q(UpdateTaskDocument, { id: taskId, input: { title: `bench ${attempt}` } })
        const live = await until('workspaceEvents live', () => {
          if (failure) throw new Error(`workspaceEvents: ${JSON.stringify(failure).slice(0, 200)}`)
          return events.slice(seen).some((e) => e.__typename === 'TaskUpserted' && e.task?.id === taskId)
        }, 1000).then(
          () => true,
          (error: unknown) => {
            if (failure || attempt >= 30) throw error
            return false
          },
        )
        if (live) break
      }
      const session = (await q(StartSessionDocument, { input: { taskId, agentProfile: agent } })).startSession
      await settled(session.id, 0)
      const current = async () => {
        await withDeadline('projector idle', s.projector.idle())
        const revision = (await q(TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!.revision
        await until(`subscriber at revision ${revision}`, () => events.some((e) => e.taskId === taskId && e.summary!.revision >= revision))
        return revision
      }
      await current()
      const before = [...events].reverse().find((e) => e.taskId === taskId)!.summary!
      const mark = events.length

      const file = path.join(repo, 'notes.md')
      let prompt = '[write] Write notes.md.'
      if (agent === 'mock')
        prompt = JSON.stringify({
          script: [
            { tool: { title: 'Write notes.md', kind: 'edit' } },
            { permission: { title: 'Write notes.md', toolCall: { kind: 'edit', locations: [{ path: file }] } } },
            { write: { path: 'notes.md', content: NOTES } },
            { say: 'Wrote notes.md.' },
          ],
        })
      if (agent === 'claude') anthropic.when('[write]', toolUseReply('Write', { file_path: file, content: NOTES }), textReply('Wrote notes.md.'))
      if (agent === 'codex') openai.script(reply.applyPatch(`*** Begin Patch\n*** Add File: notes.md\n${NOTES.trimEnd().split('\n').map((l) => `+${l}`).join('\n')}\n*** End Patch\n`), reply.text('Wrote notes.md.'))
      await send(taskId, session.id, prompt)
      const asking = await until(`${agent} permission request`, async () =>
        (await detail(session.id)).messages.find((m) => m.kind === 'PERMISSION_REQUEST' && m.status === 'PENDING'),
      )
      const allow = asking.permissionOptions.find((o) => o.kind === 'ALLOW_ONCE') ?? asking.permissionOptions[0]!
      await q(RespondToPermissionDocument, { sessionId: session.id, pendingId: asking.pendingId!, optionId: allow.id })
      await settled(session.id, 1)
      const finalRevision = await current()
      const done = await detail(session.id)
      if (!done.messages.some((m) => m.kind === 'MESSAGE' && m.author === 'AGENT' && m.content === 'Wrote notes.md.')) oddities.push(`${agent}: the story's final answer was not "Wrote notes.md."`)
      const mine = events.slice(mark).filter((e) => e.__typename === 'TaskStatusSummaryUpdated' && e.taskId === taskId)
      const sequence: string[] = [`r${before.revision} (before the prompt): ${brief(before)}`]
      let previous = before
      for (const e of mine) {
        const summary = e.summary!
        sequence.push(`r${summary.revision}: ${brief(summary)} — ${changed(previous, summary).join(', ') || 'nothing visible changed'}`)
        previous = summary
      }
      await stop(session.id)
      return {
        events: mine.length,
        firstRevision: before.revision,
        lastRevision: finalRevision,
        sequence,
        fileWritten: existsSync(file) && readFileSync(file, 'utf8') === NOTES,
        permissionOptions: asking.permissionOptions.map((o) => o.id).join(', '),
        chosen: allow.id,
        toolMessages: done.messages.filter((m) => m.kind === 'TOOL_CALL').length,
      }
    } finally {
      dispose()
      await client.dispose()
    }
  }

  function brief(summary: Summary): string {
    return `${summary.primarySession?.state ?? '—'} · ${summary.foregroundActivity ?? 'idle'} · ${summary.pendingAction ?? 'no action'}`
  }
  function changed(a: Summary, b: Summary): string[] {
    const keys = Object.keys(b).filter((k) => k !== 'revision') as (keyof Summary)[]
    return keys.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).map((k) => (k === 'git' ? `git ${JSON.stringify(b.git)}` : k))
  }

  console.info('3. summary revisions of one permission turn…')
  for (const agent of AGENTS) {
    try {
      const r = await story(agent)
      stories[agent] = r
      console.info(`   ${agent}: ${r.events} summary events`)
    } catch (error) {
      stories[agent] = { error: errorText(error) }
      console.info(`   ${agent}: FAILED ${errorText(error)}`)
    }
  }
  if (openai.unscripted > 0) oddities.push(`the OpenAI fake answered ${openai.unscripted} main request(s) nobody scripted`)
  const unscriptedClaude = anthropic.mainRequests().filter((r) => r.unscripted).length
  if (unscriptedClaude > 0) oddities.push(`the Anthropic fake answered ${unscriptedClaude} main request(s) nobody scripted`)
  const strays = [...anthropic.requests.filter((r) => r.kind === 'other').map((r) => `${r.method} ${r.url}`), ...openai.requests.filter((r) => r.kind === 'auxiliary' && r.path.endsWith('/responses') === false).map((r) => `${r.method} ${r.path}`)]
  if (strays.length) oddities.push(`provider calls outside the conversation: ${[...new Set(strays)].join(', ')}`)
} catch (error) {
  oddities.push(`the run failed: ${errorText(error)}`)
} finally {
  for (const client of clients) await withDeadline('client dispose', Promise.resolve(client.dispose())).catch(() => undefined)
  if (server) await withDeadline('server close', server.close(), 30_000).catch((e: unknown) => oddities.push(`closing the server: ${errorText(e)}`))
  await anthropic.close()
  await openai.close()
  claude.cleanup()
  codex.cleanup()
  for (const repo of repos) rmSync(repo, { recursive: true, force: true })
  rmSync(dir, { recursive: true, force: true })
  clearTimeout(runDeadline)
}
finish(oddities.some((o) => o.startsWith('the run')) ? 1 : 0)
