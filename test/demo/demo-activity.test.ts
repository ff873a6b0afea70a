// The demo's activity loop against an in-memory API (fetch stubbed) under fake timers: every look,
// answer and script is driven by advancing the clock, so the test is deterministic and takes no
// real time. test/demo/demo-seed.test.ts runs the same activity against the real server and agents.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { startDemoActivity, type DemoActivity } from '../../src/demo/activity.ts'
import type { DemoTask } from '../../src/demo/seed.ts'
import { seeded } from './seeded-random.ts'

const INTERVAL = 300
/** How long a script that streams keeps its row generating in the fake. */
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

/** The server as the activity sees it: scripts take effect at once (a streaming one runs for GENERATING_MS). */
class FakeApi {
  rows = new Map<string, FakeRow>()
  operations: string[] = []
  /** Answers the next request of this operation with RATE_LIMITED. */
  rateLimitNext?: { operation: string; retryAfterMs: number }
  private pendings = 0

  constructor(tasks: DemoTask[]) {
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
    const input = variables.input as { taskId: string; content: string } | undefined
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
        const steps = (JSON.parse(input!.content) as { script: Record<string, unknown>[] }).script
        row.unobservedWrites += steps.filter((s) => 'write' in s).length
        row.pendingId = undefined
        const has = (step: string) => steps.some((s) => step in s)
        row.shown = has('permission') ? 'PERMISSION' : has('clarify') ? 'CLARIFICATION' : has('error') ? 'ERROR' : has('stream') ? 'GENERATING' : 'IDLE'
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
const TASKS: DemoTask[] = Array.from({ length: 27 }, (_, i) => ({ id: `t${i}`, sessionId: i % 7 === 3 ? null : `s${i}`, repoPath: `/tmp/r${i}` }))
const WITH_SESSION = TASKS.filter((t) => t.sessionId).length // 23
/** The activity's shares for 23 sessions: round(23 × 0.22 / 0.17 / 0.12 / 0.12). */
const TARGETS = { GENERATING: 5, PERMISSION: 4, CLARIFICATION: 3, ERROR: 3 }

describe('demo activity (in-memory API, fake timers)', () => {
  let api: FakeApi
  let logs: string[]
  let activity: DemoActivity | undefined

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    api = new FakeApi(TASKS)
    logs = []
    vi.stubGlobal('fetch', api.fetch)
  })
  afterEach(async () => {
    await activity?.stop()
    activity = undefined
    vi.unstubAllGlobals()
    vi.useRealTimers()
  })

  const start = () => (activity = startDemoActivity({ graphqlUrl: 'http://fake/graphql', token: 't', tasks: TASKS, random: seeded(13), intervalMs: INTERVAL, log: (m) => logs.push(m) }))

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
