import type { PullRequestObservation } from './inputs.ts'
import { PULL_REQUEST_AGGREGATE_STATES, type PullRequestAggregateState, type PullRequestSummary } from './types.ts'

/** PULL_REQUEST_AGGREGATE_STATES is ordered most attention-worthy first. */
const ATTENTION = PULL_REQUEST_AGGREGATE_STATES
const rank = (state: PullRequestAggregateState) => ATTENTION.indexOf(state)

const isOpen = (pr: PullRequestObservation) => pr.state === 'OPEN'

/** One pull request's display state; the rules apply in this order. */
export function classifyPullRequest(pr: PullRequestObservation): PullRequestAggregateState {
  if (pr.state === 'MERGED') return 'MERGED'
  if (pr.state === 'CLOSED') return 'CLOSED'
  if (!isOpen(pr)) return 'NEUTRAL'
  if (pr.draft) return 'DRAFT'
  if (pr.mergeableState === 'blocked' || pr.mergeableState === 'dirty') return 'BLOCKED'
  if (pr.reviewDecision === 'CHANGES_REQUESTED' || pr.checks === 'FAILURE') return 'FAILURE'
  if (pr.checks === 'PENDING') return 'PENDING'
  if (pr.reviewDecision === 'REVIEW_REQUIRED') return 'AWAITING_REVIEW'
  if (pr.reviewDecision === 'APPROVED' && (pr.checks === 'NONE' || pr.checks === 'SUCCESS')) return 'READY'
  if (pr.checks === 'SUCCESS') return 'PASSING'
  return 'READY'
}

/**
 * Open pull requests are considered before terminal ones; the representative is open first,
 * then the one needing most attention, then the lowest number. Automation flags come from open
 * pull requests only.
 */
export function pullRequestSummary(prs: PullRequestObservation[]): PullRequestSummary | null {
  if (prs.length === 0) return null
  const classified = prs.map((pr) => ({ pr, state: classifyPullRequest(pr), open: isOpen(pr) }))
  const open = classified.filter((c) => c.open)
  const considered = open.length > 0 ? open : classified
  const aggregateState = considered.map((c) => c.state).sort((a, b) => rank(a) - rank(b))[0]!
  const representative = [...classified].sort(
    (a, b) =>
      Number(b.open) - Number(a.open) ||
      rank(a.state) - rank(b.state) ||
      a.pr.number - b.pr.number ||
      (a.pr.repository < b.pr.repository ? -1 : a.pr.repository > b.pr.repository ? 1 : 0),
  )[0]!.pr
  return {
    count: prs.length,
    openCount: open.length,
    aggregateState,
    representative: { repository: representative.repository, number: representative.number, url: representative.url },
    autoFixEnabled: open.some((c) => c.pr.autoFix),
    autoMergeEnabled: open.some((c) => c.pr.autoMerge),
  }
}
