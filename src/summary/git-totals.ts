import type { GitObservation } from './inputs.ts'
import type { GitTotals } from './types.ts'

/**
 * Totals over the latest observation of every repository of the task (whichever session made
 * it), so an update of one repository never forgets its unchanged siblings.
 */
export function gitTotals(observations: GitObservation[]): GitTotals | null {
  const latest = new Map<string, GitObservation>()
  for (const o of observations) {
    const current = latest.get(o.taskRepositoryId)
    if (
      !current ||
      o.observedAt.getTime() > current.observedAt.getTime() ||
      (o.observedAt.getTime() === current.observedAt.getTime() && o.sessionId > current.sessionId)
    )
      latest.set(o.taskRepositoryId, o)
  }
  if (latest.size === 0) return null
  const totals: GitTotals = { additions: 0, deletions: 0, changedFiles: 0, ahead: 0, behind: 0, comparisonUnavailable: false }
  for (const o of latest.values()) {
    totals.additions += o.additions
    totals.deletions += o.deletions
    totals.changedFiles += o.changedFiles
    totals.ahead += o.ahead
    totals.behind += o.behind
    totals.comparisonUnavailable ||= o.comparisonUnavailable
  }
  return totals
}
