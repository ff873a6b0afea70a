import { describe, expect, it } from 'vitest'
import { attentionBadges, primaryBadge, rowBadges, waitingBadge } from '../../src/web/badges.ts'
import type { StatusSummary } from '../../packages/client/src/index.ts'
import { summary as clientSummary } from '../client/harness.ts'

/** A summary with a primary session waiting for input, nothing else going on, then `overrides`. */
const summary = (overrides: Partial<StatusSummary> = {}): StatusSummary =>
  clientSummary('t1', 1, { lastActivityAt: '2026-12-04T10:00:00.000Z', primarySession: { id: 's1', state: 'WAITING_FOR_INPUT' }, ...overrides })

describe('row precedence: permission > clarification > generating > background > coarse state', () => {
  it.each([
    { name: 'permission over everything', s: { pendingAction: 'PERMISSION', foregroundActivity: 'GENERATING' }, kind: 'permission' },
    { name: 'clarification over generating', s: { pendingAction: 'CLARIFICATION', foregroundActivity: 'GENERATING' }, kind: 'clarification' },
    { name: 'generating over the session state', s: { foregroundActivity: 'GENERATING', primarySession: { id: 's', state: 'RUNNING' } }, kind: 'generating' },
    { name: 'background over the session state', s: { foregroundActivity: 'BACKGROUND', primarySession: { id: 's', state: 'RUNNING' } }, kind: 'background' },
    { name: 'coarse state when nothing is going on', s: { primarySession: { id: 's', state: 'FAILED' } }, kind: 'state' },
    { name: 'no session at all', s: { primarySession: null }, kind: 'none' },
  ] as const)('$name', ({ s, kind }) => {
    expect(primaryBadge(summary(s as Partial<StatusSummary>)).kind).toBe(kind)
  })

  it('a task with no summary yet shows no session', () => {
    expect(primaryBadge(null).kind).toBe('none')
  })

  it('the error badge is independent of the primary icon', () => {
    const activeError = { preview: 'Rate limited', category: 'rate_limited', occurredAt: '', recoveryActions: [], sessionId: 's1', stamp: 'x', taskRepositoryId: null }
    const badges = rowBadges(summary({ pendingAction: 'PERMISSION', activeError } as Partial<StatusSummary>))
    expect(badges.primary.kind).toBe('permission')
    expect(badges.error).toEqual({ preview: 'Rate limited', category: 'rate_limited' })
    expect(rowBadges(summary()).error).toBeNull()
  })
})

describe('git and pull-request badges', () => {
  it('shows Git totals only when there is something to show', () => {
    const git = { additions: 3, deletions: 1, changedFiles: 2, ahead: 0, behind: 0, comparisonUnavailable: false }
    expect(rowBadges(summary({ git })).git).toMatchObject({ additions: 3, deletions: 1, changedFiles: 2 })
    expect(rowBadges(summary({ git: { ...git, additions: 0, deletions: 0, changedFiles: 0 } })).git).toBeNull()
    expect(rowBadges(summary({ git: { ...git, changedFiles: 0, comparisonUnavailable: true } })).git?.unavailable).toBe(true)
  })

  it('shows the aggregate pull-request state with its automation indicators', () => {
    const pullRequest = {
      aggregateState: 'FAILURE',
      autoFixEnabled: true,
      autoMergeEnabled: false,
      count: 2,
      openCount: 1,
      representative: { number: 7, repository: 'o/r', url: 'https://github.com/o/r/pull/7' },
    }
    expect(rowBadges(summary({ pullRequest } as Partial<StatusSummary>)).pullRequest).toEqual({ state: 'FAILURE', number: 7, count: 2, autoMerge: false, autoFix: true })
    expect(rowBadges(summary()).pullRequest).toBeNull()
  })
})

describe('attention badges', () => {
  const since = '2026-12-04T10:00:00.000Z'
  const now = (ms: number) => Date.parse(since) + ms
  const minute = 60_000

  it.each([
    { after: -5_000, text: 'waiting <1 min', label: 'Waiting on you for less than a minute' }, // a clock a little behind the server's
    { after: 0, text: 'waiting <1 min', label: 'Waiting on you for less than a minute' },
    { after: 59_999, text: 'waiting <1 min', label: 'Waiting on you for less than a minute' },
    { after: minute, text: 'waiting 1 min', label: 'Waiting on you for 1 minute' },
    { after: 5 * minute + 59_000, text: 'waiting 5 min', label: 'Waiting on you for 5 minutes' },
    { after: 59 * minute, text: 'waiting 59 min', label: 'Waiting on you for 59 minutes' },
    { after: 60 * minute, text: 'waiting 1 h', label: 'Waiting on you for 1 hour' },
    { after: 150 * minute, text: 'waiting 2 h', label: 'Waiting on you for 2 hours' },
    { after: 24 * 60 * minute, text: 'waiting 1 d', label: 'Waiting on you for 1 day' },
    { after: 3 * 24 * 60 * minute + 5, text: 'waiting 3 d', label: 'Waiting on you for 3 days' },
  ])('waiting since $after ms: "$text"', ({ after, text, label }) => {
    expect(waitingBadge(summary({ pendingAction: 'PERMISSION', waitingSince: since }), now(after))).toEqual({ text, label, since })
  })

  it('no waiting badge without a pending action or without waitingSince', () => {
    expect(waitingBadge(summary({ waitingSince: since }), now(minute))).toBeNull()
    expect(waitingBadge(summary({ pendingAction: 'CLARIFICATION', waitingSince: null }), now(minute))).toBeNull()
    expect(waitingBadge(null, now(minute))).toBeNull()
  })

  it.each([
    { count: 0, queued: null },
    { count: 1, queued: { count: 1, text: '1 queued', label: '1 prompt queued behind the current turn' } },
    { count: 2, queued: { count: 2, text: '2 queued', label: '2 prompts queued behind the current turn' } },
  ])('$count queued prompts', ({ count, queued }) => {
    expect(attentionBadges(summary({ queuedPromptCount: count })).queued).toEqual(queued)
  })

  it.each([
    { reason: 'SERVER_RESTART', text: 'interrupted: server restart', label: /server running the agent restarted/ },
    { reason: 'OWNER_LOST', text: 'interrupted: owner lost', label: /lost it and another took over/ },
    { reason: 'SOMETHING_NEW', text: 'interrupted', label: /cut off by the server/ },
  ])('interruption $reason', ({ reason, text, label }) => {
    const interruption = { reason, sessionId: 's1', at: since } as StatusSummary['interruption']
    const badge = attentionBadges(summary({ interruption })).interruption
    expect(badge).toMatchObject({ reason, text })
    expect(badge?.label).toMatch(label)
    expect(attentionBadges(summary()).interruption).toBeNull()
  })
})
