import { describe, expect, it } from 'vitest'
import { deriveSummary } from '../../src/summary/derive.ts'
import type { SessionObservation, SummaryInputs } from '../../src/summary/inputs.ts'
import { validateSummary } from '../../src/summary/semantic.ts'
import type { SessionState, SummaryPayload } from '../../src/summary/types.ts'
import { at, clarification, git, inputs, iso, launchError, permission, pr, session, sessionError, turn } from './builders.ts'

describe('foregroundActivity and activeSubagentCount', () => {
  it.each<{ name: string; sessions: SessionObservation[]; activity: SummaryPayload['foregroundActivity']; subagents: number }>([
    { name: 'no sessions', sessions: [], activity: null, subagents: 0 },
    { name: 'one idle session', sessions: [session({ state: 'IDLE' })], activity: null, subagents: 0 },
    { name: 'a RUNNING session → GENERATING', sessions: [session({ state: 'RUNNING' })], activity: 'GENERATING', subagents: 0 },
    {
      name: 'RUNNING wins over another session’s background work',
      sessions: [session({ id: 'a', state: 'IDLE', backgroundWork: true, activeSubagentCount: 2 }), session({ id: 'b', state: 'RUNNING' })],
      activity: 'GENERATING',
      subagents: 2,
    },
    {
      name: 'RUNNING with its own subagents is still GENERATING',
      sessions: [session({ state: 'RUNNING', activeSubagentCount: 3 })],
      activity: 'GENERATING',
      subagents: 3,
    },
    ...(['STARTING', 'IDLE', 'WAITING_FOR_INPUT'] as SessionState[]).flatMap((state) => [
      {
        name: `${state} session with subagents → BACKGROUND`,
        sessions: [session({ state, activeSubagentCount: 2 })],
        activity: 'BACKGROUND' as const,
        subagents: 2,
      },
      {
        name: `${state} session with background work → BACKGROUND`,
        sessions: [session({ state, backgroundWork: true })],
        activity: 'BACKGROUND' as const,
        subagents: 0,
      },
    ]),
    ...(['CREATED', 'COMPLETED', 'FAILED', 'CANCELLED'] as SessionState[]).map((state) => ({
      name: `${state} session with subagents and background work does not count`,
      sessions: [session({ state, activeSubagentCount: 4, backgroundWork: true })],
      activity: null,
      subagents: 0,
    })),
    {
      name: 'subagents sum over live sessions only',
      sessions: [
        session({ id: 'a', state: 'IDLE', activeSubagentCount: 2 }),
        session({ id: 'b', state: 'WAITING_FOR_INPUT', activeSubagentCount: 3 }),
        session({ id: 'c', state: 'FAILED', activeSubagentCount: 10 }),
        session({ id: 'd', state: 'STARTING', activeSubagentCount: 1 }),
      ],
      activity: 'BACKGROUND',
      subagents: 6,
    },
    {
      name: 'a FAILED session with subagents next to a quiet live one → null, 0',
      sessions: [session({ id: 'a', state: 'FAILED', activeSubagentCount: 5 }), session({ id: 'b', state: 'IDLE' })],
      activity: null,
      subagents: 0,
    },
    {
      name: 'a negative subagent count is treated as zero',
      sessions: [session({ id: 'a', state: 'IDLE', activeSubagentCount: -3 }), session({ id: 'b', state: 'IDLE', activeSubagentCount: 2 })],
      activity: 'BACKGROUND',
      subagents: 2,
    },
    {
      name: 'spec: startup recovery moves RUNNING to WAITING_FOR_INPUT → no generating activity',
      sessions: [session({ state: 'WAITING_FOR_INPUT', isPrimary: true })],
      activity: null,
      subagents: 0,
    },
  ])('$name → $activity, $subagents', ({ sessions, activity, subagents }) => {
    const summary = deriveSummary(inputs({ sessions }))
    expect(summary.foregroundActivity).toBe(activity)
    expect(summary.activeSubagentCount).toBe(subagents)
    validateSummary(summary)
  })
})

describe('primarySession', () => {
  it.each<{ name: string; sessions: SessionObservation[]; expected: SummaryPayload['primarySession'] }>([
    { name: 'no sessions → null', sessions: [], expected: null },
    { name: 'the only session', sessions: [session({ id: 'a', state: 'RUNNING' })], expected: { id: 'a', state: 'RUNNING' } },
    {
      name: 'the isPrimary session wins over a newer one',
      sessions: [
        session({ id: 'old', state: 'FAILED', isPrimary: true, createdAt: at(1) }),
        session({ id: 'new', state: 'RUNNING', createdAt: at(9) }),
      ],
      expected: { id: 'old', state: 'FAILED' },
    },
    {
      name: 'the isPrimary session wins when listed last',
      sessions: [
        session({ id: 'new', state: 'RUNNING', createdAt: at(9) }),
        session({ id: 'old', state: 'IDLE', isPrimary: true, createdAt: at(1) }),
      ],
      expected: { id: 'old', state: 'IDLE' },
    },
    {
      name: 'without a flag, the newest session (newest last)',
      sessions: [session({ id: 'a', createdAt: at(1) }), session({ id: 'b', state: 'COMPLETED', createdAt: at(2) })],
      expected: { id: 'b', state: 'COMPLETED' },
    },
    {
      name: 'without a flag, the newest session (newest first)',
      sessions: [session({ id: 'b', state: 'COMPLETED', createdAt: at(2) }), session({ id: 'a', createdAt: at(1) })],
      expected: { id: 'b', state: 'COMPLETED' },
    },
    {
      name: 'without a flag, the newest even when its id sorts first',
      sessions: [session({ id: 'z', createdAt: at(1) }), session({ id: 'a', state: 'STARTING', createdAt: at(2) })],
      expected: { id: 'a', state: 'STARTING' },
    },
    {
      name: 'same createdAt: deterministic (greater id), either order',
      sessions: [session({ id: 'a', createdAt: at(1) }), session({ id: 'b', state: 'RUNNING', createdAt: at(1) })],
      expected: { id: 'b', state: 'RUNNING' },
    },
  ])('$name', ({ sessions, expected }) => {
    expect(deriveSummary(inputs({ sessions })).primarySession).toEqual(expected)
    expect(deriveSummary(inputs({ sessions: [...sessions].reverse() })).primarySession).toEqual(expected)
  })
})

describe('lastActivityAt', () => {
  type Row = {
    name: string
    createdAt?: number
    updatedAt?: number
    prompt?: number | null
    turn?: number | null
    previous?: number | null
    /** The task row's stored lastActivityAt (defaults to its creation). */
    stored?: number
    expected: number
  }
  it.each<Row>([
    { name: 'only task creation', expected: 0 },
    { name: 'a persisted task mutation', updatedAt: 4, expected: 4 },
    { name: 'a user prompt', updatedAt: 1, prompt: 6, expected: 6 },
    { name: 'a conversational turn', updatedAt: 1, prompt: 2, turn: 8, expected: 8 },
    { name: 'an older prompt does not move it back', updatedAt: 9, prompt: 2, turn: 3, expected: 9 },
    { name: 'creation later than everything else (clock skew)', createdAt: 20, updatedAt: 5, prompt: 6, turn: 7, expected: 20 },
    { name: 'monotonic: a larger previous value is kept', updatedAt: 2, prompt: 3, turn: 4, previous: 30, expected: 30 },
    { name: 'a smaller previous value is superseded', updatedAt: 2, prompt: 3, turn: 12, previous: 10, expected: 12 },
    { name: 'previous equal to the newest source', updatedAt: 5, previous: 5, expected: 5 },
    { name: 'rebuilt with no previous: the task row keeps activity of deleted history', updatedAt: 2, stored: 25, expected: 25 },
    { name: 'the task row never moves it back', updatedAt: 2, turn: 14, stored: 9, expected: 14 },
    { name: 'the task row beside a larger previous value', stored: 11, previous: 13, expected: 13 },
  ])('$name → minute $expected', ({ createdAt = 0, updatedAt = createdAt, prompt = null, turn = null, previous = null, stored = createdAt, expected }) => {
    const summary = deriveSummary(
      inputs({
        task: { id: 't', workspaceId: 'w', createdAt: at(createdAt), updatedAt: at(updatedAt), lastActivityAt: at(stored) },
        activity: {
          lastUserPromptAt: prompt === null ? null : at(prompt),
          lastConversationalTurnAt: turn === null ? null : at(turn),
        },
        previousLastActivityAt: previous === null ? null : at(previous),
      }),
    )
    expect(summary.lastActivityAt).toBe(iso(expected))
    validateSummary(summary)
  })

  it('spec: Git and pull-request changes of an idle task do not move lastActivityAt', () => {
    const base = inputs({ previousLastActivityAt: at(3), activity: { lastUserPromptAt: at(3), lastConversationalTurnAt: at(2) } })
    const before = deriveSummary(base)
    const after = deriveSummary({
      ...base,
      git: [git({ additions: 5, observedAt: at(50) })],
      pullRequests: [pr({ checks: 'SUCCESS' })],
      sessions: [session({ state: 'IDLE', createdAt: at(40), recentTurns: [turn('boot', 45, { lifecycleOnly: true })] })],
    })
    expect(before.lastActivityAt).toBe(iso(3))
    expect(after.lastActivityAt).toBe(iso(3))
    expect(after.git?.additions).toBe(5)
  })
})

describe('deriveSummary: a whole task', () => {
  it('derives every field from authoritative observations', () => {
    const input: SummaryInputs = inputs({
      task: { id: 'task-1', workspaceId: 'ws-1', createdAt: at(0), updatedAt: at(2), lastActivityAt: at(2) },
      sessions: [
        session({
          id: 's-main',
          state: 'WAITING_FOR_INPUT',
          isPrimary: true,
          createdAt: at(1),
          activeSubagentCount: 1,
          recentTurns: [turn('t2', 6), turn('t1', 2)],
          queuedPrompts: 2,
          pendingRequests: [clarification('t2', { createdAt: at(7) }), permission('t1')],
        }),
        session({
          id: 's-side',
          queuedPrompts: 1,
          state: 'FAILED',
          createdAt: at(3),
          activeSubagentCount: 4,
          error: sessionError('e1', 7, { code: 'AGENT_CRASHED', message: 'agent exited with 137' }),
        }),
      ],
      launchError: launchError({ occurredAt: at(1) }),
      git: [git({ sessionId: 's-main', taskRepositoryId: 'r1', additions: 3, deletions: 1, changedFiles: 1, ahead: 2 })],
      pullRequests: [pr({ number: 4, checks: 'PENDING', autoMerge: true }), pr({ number: 2, state: 'MERGED' })],
      activity: { lastUserPromptAt: at(6), lastConversationalTurnAt: at(5) },
      previousLastActivityAt: at(4),
    })
    const summary = deriveSummary(input)
    expect(summary).toEqual({
      lastActivityAt: iso(6),
      primarySession: { id: 's-main', state: 'WAITING_FOR_INPUT' },
      foregroundActivity: 'BACKGROUND',
      activeSubagentCount: 1,
      pendingAction: 'CLARIFICATION',
      activeError: {
        sessionId: 's-side',
        taskRepositoryId: null,
        stamp: 'e1',
        occurredAt: iso(7),
        preview: 'agent exited with 137',
        category: 'AGENT_CRASHED',
        recoveryActions: ['RESUME_SESSION'],
      },
      git: { additions: 3, deletions: 1, changedFiles: 1, ahead: 2, behind: 0, comparisonUnavailable: false },
      pullRequest: {
        count: 2,
        openCount: 1,
        aggregateState: 'PENDING',
        representative: { repository: 'acme/app', number: 4, url: 'https://github.com/acme/app/pull/4' },
        autoFixEnabled: false,
        autoMergeEnabled: true,
      },
      waitingSince: iso(7),
      queuedPromptCount: 3,
      interruption: null,
    })
    validateSummary(summary)
  })

  it('an empty task: only lastActivityAt is set', () => {
    expect(deriveSummary(inputs())).toEqual({
      lastActivityAt: '2026-01-01T00:00:00.000Z',
      primarySession: null,
      foregroundActivity: null,
      activeSubagentCount: 0,
      pendingAction: null,
      activeError: null,
      git: null,
      pullRequest: null,
      waitingSince: null,
      queuedPromptCount: 0,
      interruption: null,
    })
  })

  it('is pure: the inputs are not mutated and the same inputs give the same summary', () => {
    const input = inputs({
      sessions: [session({ id: 'b', createdAt: at(2) }), session({ id: 'a', createdAt: at(1), recentTurns: [turn('x', 1), turn('y', 2)] })],
      pullRequests: [pr({ number: 2 }), pr({ number: 1 })],
    })
    const snapshot = structuredClone(input)
    const first = deriveSummary(input)
    expect(input).toEqual(snapshot)
    expect(deriveSummary(input)).toEqual(first)
  })
})
