import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDemoActivity } from '../../src/demo/activity.ts'
import { bundleMockAgent, type BundledMock } from '../../src/demo/fast-mock.ts'
import { graphql } from '../../src/demo/graphql.ts'
import { seedDemoWorkspace } from '../../src/demo/seed.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { eventually } from '../support/wait.ts'
import { seeded } from './seeded-random.ts'

interface Row {
  id: string
  title: string
  repositories: { localPath: string | null; baseBranch: string | null }[]
  statusSummary: {
    foregroundActivity: string | null
    pendingAction: 'PERMISSION' | 'CLARIFICATION' | null
    activeError: { category: string | null } | null
    git: { changedFiles: number } | null
    primarySession: { id: string; state: string } | null
  } | null
}

const TASKS = /* GraphQL */ `
  query DemoTestTasks($ws: ID!) {
    tasks(workspaceId: $ws, first: 100) {
      edges {
        node {
          id
          title
          repositories { localPath baseBranch }
          statusSummary { foregroundActivity pendingAction activeError { category } git { changedFiles } primarySession { id state } }
        }
      }
    }
  }
`

const TRANSCRIPT = /* GraphQL */ `
  query DemoTestTranscript($id: ID!) { session(id: $id) { messages(last: 50) { kind author content status } } }
`

interface Line {
  kind: string
  author: string
  content: string
  status: string | null
}

/** Words, not JSON or counters: no braces, no "0;1;2;…"; a finished sentence has several words. */
function expectWords(text: string, what: string) {
  expect(text, what).not.toMatch(/[{}]|"script"|\d;\d/)
  if (/[.?!]$/.test(text)) expect(text.match(/[A-Za-z]+/g)?.length ?? 0, what).toBeGreaterThanOrEqual(4)
}

/** Mock agents this process (the in-process test server) has as children. */
function agentProcesses(): number {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'mock-agent'], { encoding: 'utf8' }).trim().split('\n').length
  } catch {
    return 0 // pgrep exits 1 when nothing matches
  }
}

describe('demo seed and activity', () => {
  let server: TestServer
  let mock: BundledMock | undefined
  beforeAll(async () => {
    // As `npm run demo` runs them: the mock agent bundled into one file (fast-mock.ts), started by plain Node.
    mock = await bundleMockAgent()
    if (!mock) throw new Error('the mock agent could not be bundled')
    server = await startTestServer('sqlite', { env: { AGENT_PROFILES: JSON.stringify({ mock: mock.profile }) } })
  }, 60_000)
  afterAll(async () => {
    await server?.close()
    await mock?.remove()
  })

  // The activity's first move only (its looks are an hour apart): one script per session in the
  // shares of the mix, run by the real mock agents. Whatever the agents do when, the rows settle on
  // exactly those shares; the looks themselves are covered under fake timers in demo-activity.test.ts.
  it('seeds 27 tasks, the first scripts put exactly the shares of each state on the rows, and cleanup leaves nothing behind', { timeout: 240_000 }, async () => {
    const started = performance.now()
    const seed = await seedDemoWorkspace({ graphqlUrl: server.graphqlUrl, adminToken: server.adminToken, tasks: 27 })
    const seedMs = performance.now() - started
    const logs: string[] = []
    const activity = startDemoActivity({ graphqlUrl: server.graphqlUrl, token: seed.token, tasks: seed.tasks, scriptDir: mock!.scriptDir, random: seeded(13), intervalMs: 3_600_000, log: (m) => logs.push(m) })
    try {
      expect(seed.tasks).toHaveLength(27)
      // Every seventh task, from the fourth, is left without a session (an idle row).
      expect(seed.tasks.map((t) => t.sessionId === null)).toEqual(Array.from({ length: 27 }, (_, i) => i % 7 === 3))
      const withSession = seed.tasks.filter((t) => t.sessionId)
      expect(new Set(seed.tasks.map((t) => t.repoPath)).size).toBe(27)
      for (const task of seed.tasks) expect(existsSync(`${task.repoPath}/.git`)).toBe(true)

      const call = { graphqlUrl: server.graphqlUrl, token: seed.token }
      const read = async () => (await graphql<{ tasks: { edges: { node: Row }[] } }>(call, TASKS, { ws: seed.workspaceId })).tasks.edges.map((e) => e.node)
      const rows = await read()
      expect(rows).toHaveLength(27)
      expect(new Set(rows.map((r) => r.title)).size).toBe(27)
      for (const row of rows) expect(row.repositories).toEqual([{ localPath: seed.tasks.find((t) => t.id === row.id)!.repoPath, baseBranch: 'main' }])
      const sessionOf = new Map(seed.tasks.map((t) => [t.id, t.sessionId]))
      for (const row of rows) expect(Boolean(row.statusSummary?.primarySession), row.title).toBe(sessionOf.get(row.id) !== null)

      // Polled over the API from the first script on, until every session got its script and the
      // stable states (requests wait, errors stay: nothing answers them before the first look) show
      // exactly the activity's shares for 23 sessions: round(23 × 0.17) permissions, round(23 × 0.12)
      // clarifications and errors; some rows generate on the way.
      let generatingSeen = 0
      const settled = await eventually(async () => {
        const summaries = (await read()).map((r) => r.statusSummary)
        const seen = {
          permission: summaries.filter((s) => s?.pendingAction === 'PERMISSION').length,
          clarification: summaries.filter((s) => s?.pendingAction === 'CLARIFICATION').length,
          error: summaries.filter((s) => s?.activeError).length,
          git: summaries.filter((s) => (s?.git?.changedFiles ?? 0) > 0).length,
        }
        generatingSeen = Math.max(generatingSeen, summaries.filter((s) => s?.foregroundActivity === 'GENERATING').length)
        return activity.stats.scriptsSent === withSession.length && seen.permission >= 4 && seen.clarification >= 3 && seen.error >= 3 && generatingSeen > 0 && seen
      }, 120_000)
      expect(settled.permission).toBe(4)
      expect(settled.clarification).toBe(3)
      expect(settled.error).toBe(3)
      expect(settled.git).toBeGreaterThan(0)
      expect(generatingSeen).toBeGreaterThan(0)
      expect(activity.stats).toMatchObject({ ticks: 0, scriptsSent: withSession.length, permissionsAnswered: 0, clarificationsAnswered: 0, failures: 0 })

      // The transcripts as a client reads them: the user's prompt is its task's sentence, and once
      // each session's reasoning has streamed a whole thought, every line reads as words.
      const transcriptOf = async (id: string) => (await graphql<{ session: { messages: Line[] } }>(call, TRANSCRIPT, { id })).session.messages
      const transcripts = await eventually(async () => {
        const all = await Promise.all(withSession.map(async (t) => ({ task: t, lines: await transcriptOf(t.sessionId!) })))
        return all.every(({ lines }) => lines.some((l) => l.kind === 'REASONING' && /[.?!]$/.test(l.content))) && all
      }, 60_000)
      let toolCalls = 0
      for (const { task, lines } of transcripts) {
        const prompts = lines.filter((l) => l.author === 'USER').map((l) => l.content)
        for (const prompt of prompts) expectWords(prompt, 'user prompt')
        expect(prompts).toEqual([task.story.prompt])
        for (const line of lines.filter((l) => l.kind === 'REASONING' || l.kind === 'MESSAGE')) expectWords(line.content, `${task.story.title}: ${line.kind}`)
        for (const tool of lines.filter((l) => l.kind === 'TOOL_CALL')) {
          toolCalls++
          expect(task.story.tools, task.story.title).toContain(tool.content)
          expect(['IN_PROGRESS', 'COMPLETED', 'FAILED'], task.story.title).toContain(tool.status)
        }
      }
      expect(toolCalls).toBeGreaterThan(withSession.length / 2)
    } finally {
      await activity.stop()
      await seed.cleanup()
    }
    const sent = activity.stats.scriptsSent
    await eventually(() => agentProcesses() === 0, 10_000)
    expect(existsSync(seed.rootDir)).toBe(false)
    for (const task of seed.tasks) expect(existsSync(task.repoPath)).toBe(false)
    expect(activity.stats.scriptsSent).toBe(sent)
    expect(activity.stats.failures, logs.join('\n')).toBe(0)
    console.info(`demo seed: 27 tasks in ${Math.round(seedMs)} ms; activity ${JSON.stringify(activity.stats)}`)
  })
})
