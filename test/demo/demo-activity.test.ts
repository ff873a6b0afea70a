// The demo's activity loop against an in-memory API (fetch stubbed) under fake timers: every look,
// answer and script is driven by advancing the clock, so the test is deterministic and takes no
// real time. test/demo/demo-seed.test.ts runs the same activity against the real server and agents.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { SCRIPTS_DIR_ENV, SESSION_ID_ENV, takeScript } from '../../src/agents/mock/script-drop.ts'
import { startDemoActivity, type DemoActivity } from '../../src/demo/activity.ts'
import type { DemoTask } from '../../src/demo/seed.ts'
import { STORIES } from '../../src/demo/stories.ts'
import { seeded } from './seeded-random.ts'

const INTERVAL = 300
/** How long a script that works for a while (its sleeps add up to 3 s or more) keeps its row generating in the fake. */
const GENERATING_MS = 3 * INTERVAL

type Shown = 'PERMISSION' | 'CLARIFICATION' | 'ERROR' | 'GENERATING' | 'IDLE'

interface FakeRow {
  sessionId: string
  shown: Shown
  runningUntil: number
  pendingId?: string
  changedFiles: number
  unobservedWrites: number
}

/** The server (and its mock agents) as the activity sees it: scripts take effect at once (a long one runs for GENERATING_MS). */
class FakeApi {
  rows = new Map<string, FakeRow>()
  operations: string[] = []
  /** Every prompt sent, and the script its mock agent took for it. */
  prompts: { sessionId: string; content: string; steps: Record<string, unknown>[] }[] = []
  /** Answers the next request of this operation with RATE_LIMITED. */
  rateLimitNext?: { operation: string; retryAfterMs: number }
  private pendings = 0

  constructor(
    tasks: DemoTask[],
    private readonly scriptDir: string,
  ) {
    for (const task of tasks)
      if (task.sessionId) this.rows.set(task.id, { sessionId: task.sessionId, shown: 'IDLE', runningUntil: 0, changedFiles: 0, unobservedWrites: 0 })
  }

  private bySession(id: string): FakeRow {
    const row = [...this.rows.values()].find((r) => r.sessionId === id)
    if (!row) throw new Error(`no session ${id}`)
    return row
  }

  private settle(row: FakeRow) {
    if (row.shown === 'GENERATING' && Date.now() >= row.runningUntil) row.shown = 'IDLE'
  }

  count(shown: Shown): number {
    for (const row of this.rows.values()) this.settle(row)
    return [...this.rows.values()].filter((r) => r.shown === shown).length
  }

  answer(operation: string, variables: Record<string, unknown>): unknown {
    const input = variables.input as { taskId: string; sessionId: string; content: string } | undefined
    switch (operation) {
      case 'DemoSummaries':
        return {
          taskStatusSummaries: (variables.ids as string[]).map((taskId) => {
            const row = this.rows.get(taskId)!
            this.settle(row)
            return {
              id: `summary-${taskId}`,
              taskId,
              foregroundActivity: row.shown === 'GENERATING' ? 'GENERATING' : null,
              pendingAction: row.shown === 'PERMISSION' || row.shown === 'CLARIFICATION' ? row.shown : null,
              activeError: row.shown === 'ERROR' ? { stamp: 'e' } : null,
              primarySession: { id: row.sessionId, state: row.shown === 'GENERATING' ? 'RUNNING' : 'IDLE' },
            }
          }),
        }
      case 'DemoAddMessage': {
        const row = this.rows.get(input!.taskId)!
        this.settle(row)
        if (row.shown === 'PERMISSION' || row.shown === 'CLARIFICATION' || row.shown === 'GENERATING') throw new Error(`script sent to a busy row (${row.shown})`)
        // As the session's mock agent does: it takes the script left for this prompt.
        const steps = takeScript({ [SCRIPTS_DIR_ENV]: this.scriptDir, [SESSION_ID_ENV]: input!.sessionId }, input!.content) as Record<string, unknown>[] | undefined
        if (!steps) throw new Error('no script was left for this prompt')
        this.prompts.push({ sessionId: input!.sessionId, content: input!.content, steps })
        const sleeps = steps.reduce((sum, s) => sum + (typeof s.sleep === 'number' ? s.sleep : 0), 0)
        row.unobservedWrites += steps.filter((s) => 'write' in s).length
        row.pendingId = undefined
        const has = (step: string) => steps.some((s) => step in s)
        row.shown = has('permission') ? 'PERMISSION' : has('clarify') ? 'CLARIFICATION' : has('error') ? 'ERROR' : sleeps >= 3_000 ? 'GENERATING' : 'IDLE'
        if (row.shown === 'PERMISSION' || row.shown === 'CLARIFICATION') row.pendingId = `p${++this.pendings}`
        if (row.shown === 'GENERATING') row.runningUntil = Date.now() + GENERATING_MS
        return { addMessage: { replayed: false, message: { id: `m${this.operations.length}` } } }
      }
      case 'DemoPending': {
        const row = this.bySession(variables.id as string)
        const kind = row.shown === 'PERMISSION' ? 'PERMISSION_REQUEST' : row.shown === 'CLARIFICATION' ? 'CLARIFICATION' : undefined
        return { session: { id: row.sessionId, messages: kind && row.pendingId ? [{ id: 'x', kind, status: 'PENDING', pendingId: row.pendingId }] : [] } }
      }
      case 'DemoRespond':
      case 'DemoAnswer': {
        const row = this.bySession(variables.sessionId as string)
        const expected = operation === 'DemoRespond' ? 'PERMISSION' : 'CLARIFICATION'
        if (row.shown !== expected || row.pendingId !== variables.pendingId) throw new Error(`${operation} for a row showing ${row.shown}`)
        row.shown = 'IDLE'
        row.pendingId = undefined
        return { [operation === 'DemoRespond' ? 'respondToPermission' : 'answerClarification']: { id: 'x', status: 'DONE' } }
      }
      case 'DemoDismiss': {
        const row = this.bySession(variables.sessionId as string)
        if (row.shown !== 'ERROR') throw new Error(`dismissing a row showing ${row.shown}`)
        row.shown = 'IDLE'
        return { dismissSessionError: { id: 'x' } }
      }
      case 'DemoRefreshGit': {
        const row = this.bySession(variables.sessionId as string)
        row.changedFiles += row.unobservedWrites
        row.unobservedWrites = 0
        return { refreshSessionGit: { id: 'x', changedFiles: row.changedFiles } }
      }
      default:
        throw new Error(`unexpected operation ${operation}`)
    }
  }

  fetch = async (_url: unknown, init: { body: string }): Promise<Response> => {
    const { query, variables } = JSON.parse(init.body) as { query: string; variables: Record<string, unknown> }
    const operation = /(?:query|mutation) (\w+)/.exec(query)![1]!
    this.operations.push(operation)
    if (this.rateLimitNext?.operation === operation) {
      const { retryAfterMs } = this.rateLimitNext
      this.rateLimitNext = undefined
      return Response.json({ errors: [{ message: 'slow down', extensions: { code: 'RATE_LIMITED', retryAfterMs } }] })
    }
    try {
      return Response.json({ data: this.answer(operation, variables) })
    } catch (error) {
      return Response.json({ errors: [{ message: (error as Error).message, extensions: { code: 'BAD_USER_INPUT' } }] })
    }
  }
}

/** 27 tasks as the seed makes them: every seventh (from the fourth) without a session. */
const TASKS: DemoTask[] = Array.from({ length: 27 }, (_, i) => ({
  id: `t${i}`,
  sessionId: i % 7 === 3 ? null : `s${i}`,
  repoPath: `/tmp/r${i}`,
  story: STORIES[i % STORIES.length]!,
}))
const WITH_SESSION = TASKS.filter((t) => t.sessionId).length // 23
/** The activity's shares for 23 sessions: round(23 × 0.22 / 0.17 / 0.12 / 0.12). */
const TARGETS = { GENERATING: 5, PERMISSION: 4, CLARIFICATION: 3, ERROR: 3 }

describe('demo activity (in-memory API, fake timers)', () => {
  let api: FakeApi
  let logs: string[]
  let activity: DemoActivity | undefined
  let scriptDir: string

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    scriptDir = mkdtempSync(path.join(os.tmpdir(), 'demo-activity-scripts-'))
    api = new FakeApi(TASKS, scriptDir)
    logs = []
    vi.stubGlobal('fetch', api.fetch)
  })
  afterEach(async () => {
    await activity?.stop()
    activity = undefined
    vi.unstubAllGlobals()
    vi.useRealTimers()
    rmSync(scriptDir, { recursive: true, force: true })
  })

  const start = () => (activity = startDemoActivity({ graphqlUrl: 'http://fake/graphql', token: 't', tasks: TASKS, scriptDir, random: seeded(13), intervalMs: INTERVAL, log: (m) => logs.push(m) }))

  it('first sends every session one script, in the shares of the mix, so every state shows before the first look', async () => {
    const activity = start()
    await vi.advanceTimersByTimeAsync(0)
    expect(activity.stats.scriptsSent).toBe(WITH_SESSION)
    expect(activity.stats.ticks).toBe(0)
    for (const [shown, count] of Object.entries(TARGETS)) expect(api.count(shown as Shown), shown).toBe(count)
    expect(api.count('IDLE')).toBe(WITH_SESSION - 15)
    expect(logs).toEqual([])
  })

  it('keeps every state on screen look after look while answering requests, dismissing errors and refreshing Git', async () => {
    const activity = start()
    await vi.advanceTimersByTimeAsync(0)
    const fewest = { PERMISSION: Infinity, CLARIFICATION: Infinity, ERROR: Infinity, GENERATING: Infinity }
    for (let look = 0; look < 150; look++) {
      await vi.advanceTimersByTimeAsync(INTERVAL)
      for (const shown of Object.keys(fewest) as (keyof typeof fewest)[]) fewest[shown] = Math.min(fewest[shown], api.count(shown))
    }
    expect(activity.stats.ticks).toBe(150)
    expect(logs).toEqual([])
    expect(activity.stats.failures).toBe(0)
    // The loop acts: requests answered, errors cleared, Git observed after scripts that wrote.
    expect(activity.stats.permissionsAnswered).toBeGreaterThan(3)
    expect(activity.stats.clarificationsAnswered).toBeGreaterThan(3)
    expect(activity.stats.errorsDismissed).toBeGreaterThan(0)
    expect(activity.stats.gitRefreshes).toBeGreaterThan(0)
    expect(Math.max(...[...api.rows.values()].map((r) => r.changedFiles))).toBeGreaterThan(0)
    expect(activity.stats.scriptsSent).toBeGreaterThan(WITH_SESSION + 25)
    // …and never empties a state: at every look each one showed on some row.
    for (const [shown, n] of Object.entries(fewest)) expect(n, shown).toBeGreaterThanOrEqual(1)
  })

  it("sends sentences as prompts, each session's first its task's own, while the mock agents take their scripts from the script folder", async () => {
    const activity = start()
    await vi.advanceTimersByTimeAsync(0)
    for (let look = 0; look < 30; look++) await vi.advanceTimersByTimeAsync(INTERVAL)
    expect(logs).toEqual([])
    expect(api.prompts.length).toBe(activity.stats.scriptsSent)
    expect(api.prompts.length).toBeGreaterThan(WITH_SESSION + 5)
    for (const { content } of api.prompts) {
      expect(content).not.toMatch(/[{}[\]]|script/)
      expect(content).toMatch(/^[A-Z][^\n]{10,}[.?!]$/)
    }
    // The first prompt of each session is its task's; the later ones follow up on it.
    for (const task of TASKS.filter((t) => t.sessionId))
      expect(api.prompts.find((p) => p.sessionId === task.sessionId)?.content, task.story.title).toBe(task.story.prompt)
    // Every script left was taken: the agents ran them, none was sent in a prompt.
    expect(readdirSync(scriptDir)).toEqual([])
  })

  it('repeats itself under the same seed: the same prompts and scripts to the same sessions', async () => {
    const run = async () => {
      api = new FakeApi(TASKS, scriptDir)
      vi.stubGlobal('fetch', api.fetch)
      const activity = start()
      for (let look = 0; look < 20; look++) await vi.advanceTimersByTimeAsync(INTERVAL)
      await activity.stop()
      return api.prompts
    }
    const first = await run()
    const second = await run()
    expect(first.length).toBeGreaterThan(WITH_SESSION)
    expect(second).toEqual(first)
  })

  it('pauses for retryAfterMs when rate limited, then goes on', async () => {
    const activity = start()
    await vi.advanceTimersByTimeAsync(0)
    api.rateLimitNext = { operation: 'DemoSummaries', retryAfterMs: 10 * INTERVAL }
    await vi.advanceTimersByTimeAsync(INTERVAL)
    expect(activity.stats.failures).toBe(1)
    expect(logs).toEqual([expect.stringContaining('rate limited; pausing')])
    const requests = api.operations.length
    await vi.advanceTimersByTimeAsync(10 * INTERVAL - 1)
    expect(api.operations.length).toBe(requests)
    await vi.advanceTimersByTimeAsync(INTERVAL + 1)
    expect(api.operations.length).toBeGreaterThan(requests)
    expect(activity.stats.failures).toBe(1)
  })

  it('sends nothing once stopped', async () => {
    const activity = start()
    await vi.advanceTimersByTimeAsync(5 * INTERVAL)
    await activity.stop()
    const requests = api.operations.length
    const stats = { ...activity.stats }
    await vi.advanceTimersByTimeAsync(100 * INTERVAL)
    expect(api.operations.length).toBe(requests)
    expect(activity.stats).toEqual(stats)
  })
})
