import { describe, expect, it } from 'vitest'
import { deriveSummary } from '../../src/summary/derive.ts'
import { gitTotals } from '../../src/summary/git-totals.ts'
import type { GitObservation } from '../../src/summary/inputs.ts'
import { validateSummary } from '../../src/summary/semantic.ts'
import type { GitTotals } from '../../src/summary/types.ts'
import { at, git, inputs } from './builders.ts'

const totals = (t: Partial<GitTotals>): GitTotals => ({
  additions: 0,
  deletions: 0,
  changedFiles: 0,
  ahead: 0,
  behind: 0,
  comparisonUnavailable: false,
  ...t,
})

describe('gitTotals', () => {
  it.each<{ name: string; observations: GitObservation[]; expected: GitTotals | null }>([
    { name: 'no observations → null', observations: [], expected: null },
    {
      name: 'one observation is copied',
      observations: [git({ additions: 10, deletions: 3, changedFiles: 2, ahead: 1, behind: 4 })],
      expected: totals({ additions: 10, deletions: 3, changedFiles: 2, ahead: 1, behind: 4 }),
    },
    {
      name: 'a clean tree is zeros, not null',
      observations: [git()],
      expected: totals({}),
    },
    {
      name: 'two repositories are summed',
      observations: [
        git({ taskRepositoryId: 'r1', additions: 10, deletions: 3, changedFiles: 2, ahead: 1, behind: 0 }),
        git({ taskRepositoryId: 'r2', additions: 5, deletions: 7, changedFiles: 1, ahead: 0, behind: 2 }),
      ],
      expected: totals({ additions: 15, deletions: 10, changedFiles: 3, ahead: 1, behind: 2 }),
    },
    {
      name: 'two repositories, every field non-zero in both, are summed field by field',
      observations: [
        git({ taskRepositoryId: 'r1', additions: 1, deletions: 2, changedFiles: 3, ahead: 4, behind: 5 }),
        git({ taskRepositoryId: 'r2', additions: 10, deletions: 20, changedFiles: 30, ahead: 40, behind: 50 }),
      ],
      expected: totals({ additions: 11, deletions: 22, changedFiles: 33, ahead: 44, behind: 55 }),
    },
    {
      name: 'two sessions observing the same repository: the newest observedAt wins (newest last)',
      observations: [
        git({ sessionId: 's1', additions: 100, observedAt: at(1) }),
        git({ sessionId: 's2', additions: 7, observedAt: at(2) }),
      ],
      expected: totals({ additions: 7 }),
    },
    {
      name: 'two sessions observing the same repository: the newest observedAt wins (newest first)',
      observations: [
        git({ sessionId: 's2', additions: 7, observedAt: at(2) }),
        git({ sessionId: 's1', additions: 100, observedAt: at(1) }),
      ],
      expected: totals({ additions: 7 }),
    },
    {
      name: 'the newest observation may come from the lexically smaller session',
      observations: [
        git({ sessionId: 'z', additions: 100, observedAt: at(1) }),
        git({ sessionId: 'a', additions: 7, observedAt: at(2) }),
      ],
      expected: totals({ additions: 7 }),
    },
    {
      name: 'same observedAt: deterministic (greater session id), greater listed first',
      observations: [
        git({ sessionId: 's2', additions: 2, observedAt: at(1) }),
        git({ sessionId: 's1', additions: 1, observedAt: at(1) }),
      ],
      expected: totals({ additions: 2 }),
    },
    {
      name: 'same observedAt: deterministic (greater session id), greater listed last',
      observations: [
        git({ sessionId: 's1', additions: 1, observedAt: at(1) }),
        git({ sessionId: 's2', additions: 2, observedAt: at(1) }),
      ],
      expected: totals({ additions: 2 }),
    },
    {
      name: 'an update of one repository keeps its unchanged sibling',
      observations: [
        git({ sessionId: 's1', taskRepositoryId: 'r1', additions: 1, observedAt: at(1) }),
        git({ sessionId: 's1', taskRepositoryId: 'r2', additions: 20, observedAt: at(1) }),
        git({ sessionId: 's2', taskRepositoryId: 'r1', additions: 3, observedAt: at(5) }),
      ],
      expected: totals({ additions: 23 }),
    },
    {
      name: 'comparisonUnavailable when one repository’s latest is unavailable',
      observations: [
        git({ taskRepositoryId: 'r1', additions: 1 }),
        git({ taskRepositoryId: 'r2', additions: 2, comparisonUnavailable: true }),
      ],
      expected: totals({ additions: 3, comparisonUnavailable: true }),
    },
    {
      name: 'comparisonUnavailable when the first repository is unavailable and the second is not',
      observations: [
        git({ taskRepositoryId: 'r1', comparisonUnavailable: true }),
        git({ taskRepositoryId: 'r2', comparisonUnavailable: false }),
      ],
      expected: totals({ comparisonUnavailable: true }),
    },
    {
      name: 'an older unavailable observation superseded by an available one does not count',
      observations: [
        git({ sessionId: 's1', comparisonUnavailable: true, observedAt: at(1) }),
        git({ sessionId: 's2', comparisonUnavailable: false, additions: 4, observedAt: at(2) }),
      ],
      expected: totals({ additions: 4 }),
    },
    {
      name: 'a newer unavailable observation replaces an older available one',
      observations: [
        git({ sessionId: 's1', comparisonUnavailable: false, additions: 4, observedAt: at(1) }),
        git({ sessionId: 's2', comparisonUnavailable: true, additions: 4, ahead: 0, observedAt: at(2) }),
      ],
      expected: totals({ additions: 4, comparisonUnavailable: true }),
    },
    {
      name: 'three repositories, two sessions each: sum of each latest',
      observations: [
        git({ sessionId: 'a', taskRepositoryId: 'r1', additions: 1, behind: 1, observedAt: at(1) }),
        git({ sessionId: 'b', taskRepositoryId: 'r1', additions: 10, behind: 0, observedAt: at(3) }),
        git({ sessionId: 'a', taskRepositoryId: 'r2', deletions: 5, observedAt: at(4) }),
        git({ sessionId: 'b', taskRepositoryId: 'r2', deletions: 50, observedAt: at(2) }),
        git({ sessionId: 'a', taskRepositoryId: 'r3', changedFiles: 9, ahead: 2, observedAt: at(1) }),
      ],
      expected: totals({ additions: 10, deletions: 5, changedFiles: 9, ahead: 2 }),
    },
  ])('$name', ({ observations, expected }) => {
    expect(gitTotals(observations)).toEqual(expected)
  })

  it('deriveSummary carries git totals and the result validates', () => {
    const summary = deriveSummary(
      inputs({ git: [git({ taskRepositoryId: 'r1', additions: 2 }), git({ taskRepositoryId: 'r2', deletions: 3 })] }),
    )
    expect(summary.git).toEqual(totals({ additions: 2, deletions: 3 }))
    validateSummary(summary)
    expect(deriveSummary(inputs({ git: [] })).git).toBeNull()
  })
})
