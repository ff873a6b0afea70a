import { describe, expect, it } from 'vitest'
import type { StatusSummary, SummaryState, TaskRow } from '../../packages/client/src/index.ts'
import { initialNoticeState, observe, requestsOf, type NoticeState } from '../../src/web/attention-notices.ts'
import { summary } from '../client/harness.ts'

const error = (stamp: string) => ({ sessionId: 's', taskRepositoryId: null, stamp, occurredAt: '2026-01-01T00:00:00.000Z', preview: 'boom', category: null, recoveryActions: [] })
const row = (id: string, s: Partial<StatusSummary> = {}, revision = 1): TaskRow => ({
  id,
  title: `Task ${id}`,
  workflowStepId: 'step',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  summary: summary(id, revision, s),
})
const waiting = (action: 'PERMISSION' | 'CLARIFICATION', since: string) => ({ pendingAction: action, waitingSince: since }) as Partial<StatusSummary>
const store = (rows: TaskRow[], status: SummaryState['status'] = 'live', workspaceId = 'w1') => ({ workspaceId, status, tasks: Object.fromEntries(rows.map((r) => [r.id, r])) })

/** Runs observations in sequence, returning the keys notified at each step. */
function walk(steps: ReturnType<typeof store>[], from: NoticeState = initialNoticeState): string[][] {
  let state = from
  return steps.map((s) => {
    const result = observe(state, s)
    state = result.state
    return result.notices.map((n) => n.key)
  })
}

describe('attention notices: one per request, on the transition seen live', () => {
  it('names each request by task, kind and waitingSince, or by task and error stamp', () => {
    expect(requestsOf(row('a', waiting('PERMISSION', 'T1'))).map((n) => [n.key, n.kind, n.body])).toEqual([['wait:a:PERMISSION:T1', 'permission', 'Needs your permission']])
    expect(requestsOf(row('a', waiting('CLARIFICATION', 'T2'))).map((n) => n.kind)).toEqual(['clarification'])
    expect(requestsOf(row('a', { activeError: error('e1') })).map((n) => [n.key, n.body])).toEqual([['error:a:e1', 'Error: boom']])
    expect(requestsOf(row('a', { ...waiting('PERMISSION', 'T1'), activeError: error('e1') })).map((n) => n.kind)).toEqual(['permission', 'error'])
    expect(requestsOf(row('a'))).toEqual([])
    expect(requestsOf({ ...row('a'), summary: null })).toEqual([])
  })

  it.each([
    { name: 'tasks already waiting at boot notify nothing', steps: [store([row('a', waiting('PERMISSION', 'T1'))])], notified: [[]] },
    { name: 'a task that starts waiting notifies once', steps: [store([row('a')]), store([row('a', waiting('PERMISSION', 'T1'))])], notified: [[], ['wait:a:PERMISSION:T1']] },
    {
      name: 'later revisions of the same wait do not notify again',
      steps: [store([row('a')]), store([row('a', waiting('CLARIFICATION', 'T1'))]), store([row('a', { ...waiting('CLARIFICATION', 'T1'), activeSubagentCount: 2 }, 2)])],
      notified: [[], ['wait:a:CLARIFICATION:T1'], []],
    },
    {
      name: 'an answered request, then a new one, notifies again',
      steps: [store([row('a')]), store([row('a', waiting('PERMISSION', 'T1'))]), store([row('a')]), store([row('a', waiting('PERMISSION', 'T2'))])],
      notified: [[], ['wait:a:PERMISSION:T1'], [], ['wait:a:PERMISSION:T2']],
    },
    {
      name: 'a new error stamp notifies; the same one does not',
      steps: [store([row('a', { activeError: error('e1') })]), store([row('a', { activeError: error('e1') }, 2)]), store([row('a', { activeError: error('e2') }, 3)])],
      notified: [[], [], ['error:a:e2']],
    },
    { name: 'a new task that arrives waiting notifies', steps: [store([row('a')]), store([row('a'), row('b', waiting('PERMISSION', 'T1'))])], notified: [[], ['wait:b:PERMISSION:T1']] },
    {
      name: 'nothing is observed while booting; the first live store is the baseline',
      steps: [store([], 'booting'), store([row('a', waiting('PERMISSION', 'T1'))], 'booting'), store([row('a', waiting('PERMISSION', 'T1'))])],
      notified: [[], [], []],
    },
    {
      name: 'another workspace starts a new baseline',
      steps: [store([row('a')]), store([row('b', waiting('PERMISSION', 'T1'))], 'booting', 'w2'), store([row('b', waiting('PERMISSION', 'T1'))], 'live', 'w2')],
      notified: [[], [], []],
    },
    {
      name: 'a resync keeps observing: a wait that began while away notifies',
      steps: [store([row('a')]), store([row('a')], 'resyncing'), store([row('a', waiting('PERMISSION', 'T1'))])],
      notified: [[], [], ['wait:a:PERMISSION:T1']],
    },
  ])('$name', ({ steps, notified }) => {
    expect(walk(steps)).toEqual(notified)
  })
})
