import { describe, expect, it } from 'vitest'
import { deriveSummary } from '../../src/summary/derive.ts'
import type { PullRequestObservation } from '../../src/summary/inputs.ts'
import { classifyPullRequest, pullRequestSummary } from '../../src/summary/pull-requests.ts'
import { validateSummary } from '../../src/summary/semantic.ts'
import type { PullRequestAggregateState, PullRequestSummary } from '../../src/summary/types.ts'
import { inputs, pr } from './builders.ts'

describe('classifyPullRequest', () => {
  it.each<{ name: string; p: Partial<PullRequestObservation>; expected: PullRequestAggregateState }>([
    // Rules, in order
    { name: 'merged', p: { state: 'MERGED' }, expected: 'MERGED' },
    { name: 'closed', p: { state: 'CLOSED' }, expected: 'CLOSED' },
    { name: 'unknown state → neutral', p: { state: 'SOMETHING' }, expected: 'NEUTRAL' },
    { name: 'draft', p: { draft: true }, expected: 'DRAFT' },
    { name: 'mergeableState blocked', p: { mergeableState: 'blocked' }, expected: 'BLOCKED' },
    { name: 'mergeableState dirty', p: { mergeableState: 'dirty' }, expected: 'BLOCKED' },
    { name: 'changes requested', p: { reviewDecision: 'CHANGES_REQUESTED' }, expected: 'FAILURE' },
    { name: 'checks failing', p: { checks: 'FAILURE' }, expected: 'FAILURE' },
    { name: 'checks pending', p: { checks: 'PENDING' }, expected: 'PENDING' },
    { name: 'review required', p: { reviewDecision: 'REVIEW_REQUIRED' }, expected: 'AWAITING_REVIEW' },
    { name: 'approved, no checks', p: { reviewDecision: 'APPROVED', checks: 'NONE' }, expected: 'READY' },
    { name: 'approved, checks passing', p: { reviewDecision: 'APPROVED', checks: 'SUCCESS' }, expected: 'READY' },
    { name: 'checks passing, no review decision', p: { checks: 'SUCCESS' }, expected: 'PASSING' },
    { name: 'open otherwise (no checks, no decision)', p: {}, expected: 'READY' },
    { name: 'open otherwise (unknown checks value)', p: { checks: 'UNKNOWN' }, expected: 'READY' },
    { name: 'mergeableState clean is not blocked', p: { mergeableState: 'clean', checks: 'SUCCESS' }, expected: 'PASSING' },
    { name: 'mergeableState behind is not blocked', p: { mergeableState: 'behind' }, expected: 'READY' },
    // Precedence
    { name: 'merged beats draft and failing checks', p: { state: 'MERGED', draft: true, checks: 'FAILURE' }, expected: 'MERGED' },
    { name: 'closed beats draft and blocked', p: { state: 'CLOSED', draft: true, mergeableState: 'blocked' }, expected: 'CLOSED' },
    { name: 'draft with failing checks is DRAFT', p: { draft: true, checks: 'FAILURE' }, expected: 'DRAFT' },
    { name: 'draft that is blocked is DRAFT', p: { draft: true, mergeableState: 'dirty' }, expected: 'DRAFT' },
    { name: 'blocked beats failing checks', p: { mergeableState: 'blocked', checks: 'FAILURE' }, expected: 'BLOCKED' },
    { name: 'dirty beats changes requested', p: { mergeableState: 'dirty', reviewDecision: 'CHANGES_REQUESTED' }, expected: 'BLOCKED' },
    { name: 'changes requested beats pending checks', p: { reviewDecision: 'CHANGES_REQUESTED', checks: 'PENDING' }, expected: 'FAILURE' },
    { name: 'changes requested beats passing checks', p: { reviewDecision: 'CHANGES_REQUESTED', checks: 'SUCCESS' }, expected: 'FAILURE' },
    { name: 'failing checks beat approval', p: { reviewDecision: 'APPROVED', checks: 'FAILURE' }, expected: 'FAILURE' },
    { name: 'pending checks beat review required', p: { reviewDecision: 'REVIEW_REQUIRED', checks: 'PENDING' }, expected: 'PENDING' },
    { name: 'pending checks beat approval', p: { reviewDecision: 'APPROVED', checks: 'PENDING' }, expected: 'PENDING' },
    { name: 'review required beats passing checks', p: { reviewDecision: 'REVIEW_REQUIRED', checks: 'SUCCESS' }, expected: 'AWAITING_REVIEW' },
  ])('$name → $expected', ({ p, expected }) => {
    expect(classifyPullRequest(pr(p))).toBe(expected)
  })
})

const rep = (repository: string, number: number) => ({
  repository,
  number,
  url: `https://github.com/${repository}/pull/${number}`,
})

describe('pullRequestSummary', () => {
  it('no pull requests → null', () => {
    expect(pullRequestSummary([])).toBeNull()
    expect(deriveSummary(inputs()).pullRequest).toBeNull()
  })

  it.each<{ name: string; prs: PullRequestObservation[]; expected: PullRequestSummary }>([
    {
      name: 'one open passing PR',
      prs: [pr({ number: 3, checks: 'SUCCESS' })],
      expected: {
        count: 1,
        openCount: 1,
        aggregateState: 'PASSING',
        representative: rep('acme/app', 3),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'an open PASSING and a closed one → PASSING, not CLOSED; representative is the open one',
      prs: [pr({ number: 1, state: 'CLOSED' }), pr({ number: 2, checks: 'SUCCESS' })],
      expected: {
        count: 2,
        openCount: 1,
        aggregateState: 'PASSING',
        representative: rep('acme/app', 2),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'an open DRAFT and a merged one → DRAFT (open before terminal)',
      prs: [pr({ number: 1, state: 'MERGED' }), pr({ number: 9, draft: true })],
      expected: {
        count: 2,
        openCount: 1,
        aggregateState: 'DRAFT',
        representative: rep('acme/app', 9),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'highest attention among open PRs: FAILURE over PASSING and PENDING',
      prs: [pr({ number: 1, checks: 'SUCCESS' }), pr({ number: 2, checks: 'FAILURE' }), pr({ number: 3, checks: 'PENDING' })],
      expected: {
        count: 3,
        openCount: 3,
        aggregateState: 'FAILURE',
        representative: rep('acme/app', 2),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'BLOCKED over AWAITING_REVIEW and READY',
      prs: [pr({ number: 5, reviewDecision: 'REVIEW_REQUIRED' }), pr({ number: 6 }), pr({ number: 7, mergeableState: 'dirty' })],
      expected: {
        count: 3,
        openCount: 3,
        aggregateState: 'BLOCKED',
        representative: rep('acme/app', 7),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'only terminal PRs: MERGED beats CLOSED; representative is the merged one',
      prs: [pr({ number: 1, state: 'CLOSED' }), pr({ number: 2, state: 'MERGED' })],
      expected: {
        count: 2,
        openCount: 0,
        aggregateState: 'MERGED',
        representative: rep('acme/app', 2),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'only closed PRs → CLOSED, lowest number represents',
      prs: [pr({ number: 8, state: 'CLOSED' }), pr({ number: 4, state: 'CLOSED' })],
      expected: {
        count: 2,
        openCount: 0,
        aggregateState: 'CLOSED',
        representative: rep('acme/app', 4),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'same attention: the lowest number represents',
      prs: [pr({ number: 12, checks: 'SUCCESS' }), pr({ number: 3, checks: 'SUCCESS' }), pr({ number: 7, checks: 'SUCCESS' })],
      expected: {
        count: 3,
        openCount: 3,
        aggregateState: 'PASSING',
        representative: rep('acme/app', 3),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'open first even when a terminal PR has a lower number',
      prs: [pr({ number: 1, state: 'MERGED' }), pr({ number: 2, state: 'CLOSED' }), pr({ number: 50 })],
      expected: {
        count: 3,
        openCount: 1,
        aggregateState: 'READY',
        representative: rep('acme/app', 50),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'same attention and number in two repositories: lexically first repository represents',
      prs: [pr({ repository: 'acme/web', number: 1 }), pr({ repository: 'acme/api', number: 1 })],
      expected: {
        count: 2,
        openCount: 2,
        aggregateState: 'READY',
        representative: rep('acme/api', 1),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'automation flags from an open PR',
      prs: [pr({ number: 1, autoFix: true }), pr({ number: 2, autoMerge: true })],
      expected: {
        count: 2,
        openCount: 2,
        aggregateState: 'READY',
        representative: rep('acme/app', 1),
        autoFixEnabled: true,
        autoMergeEnabled: true,
      },
    },
    {
      name: 'a merged PR with autoMerge / a closed PR with autoFix do not count',
      prs: [pr({ number: 1, state: 'MERGED', autoMerge: true }), pr({ number: 2, state: 'CLOSED', autoFix: true }), pr({ number: 3 })],
      expected: {
        count: 3,
        openCount: 1,
        aggregateState: 'READY',
        representative: rep('acme/app', 3),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'only terminal PRs with automation flags → flags false',
      prs: [pr({ number: 1, state: 'MERGED', autoMerge: true, autoFix: true })],
      expected: {
        count: 1,
        openCount: 0,
        aggregateState: 'MERGED',
        representative: rep('acme/app', 1),
        autoFixEnabled: false,
        autoMergeEnabled: false,
      },
    },
    {
      name: 'a draft PR’s automation flags count (a draft is open)',
      prs: [pr({ number: 1, draft: true, autoFix: true })],
      expected: {
        count: 1,
        openCount: 1,
        aggregateState: 'DRAFT',
        representative: rep('acme/app', 1),
        autoFixEnabled: true,
        autoMergeEnabled: false,
      },
    },
  ])('$name', ({ prs, expected }) => {
    expect(pullRequestSummary(prs)).toEqual(expected)
    expect(pullRequestSummary([...prs].reverse())).toEqual(expected)
    const summary = deriveSummary(inputs({ pullRequests: prs }))
    expect(summary.pullRequest).toEqual(expected)
    validateSummary(summary)
  })

  it('the aggregate over open PRs follows the full attention order', () => {
    const byState: Record<string, Partial<PullRequestObservation>> = {
      FAILURE: { checks: 'FAILURE' },
      BLOCKED: { mergeableState: 'blocked' },
      PENDING: { checks: 'PENDING' },
      AWAITING_REVIEW: { reviewDecision: 'REVIEW_REQUIRED' },
      READY: {},
      PASSING: { checks: 'SUCCESS' },
      DRAFT: { draft: true },
    }
    const order = Object.keys(byState)
    // Drop the most attention-worthy one at a time: the next one becomes the aggregate.
    for (let i = 0; i < order.length; i++) {
      const prs = order.slice(i).map((state, n) => pr({ number: 100 - n, ...byState[state] }))
      expect(pullRequestSummary(prs)?.aggregateState).toBe(order[i])
    }
  })
})
