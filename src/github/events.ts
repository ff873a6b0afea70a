// GitHub webhook payloads (the fields this server reads) → pull-request observation changes.

export type PullRequestChange = {
  repository: string
  number: number
  /** Present when the payload carries the pull request itself. */
  details?: {
    url: string
    title: string
    headBranch: string
    state: 'OPEN' | 'CLOSED' | 'MERGED'
    draft: boolean
    mergeableState: string | null
    /** pull_request.updated_at: orders this state against the stored one. */
    at?: Date
  }
  checks?: 'PENDING' | 'SUCCESS' | 'FAILURE'
  /** When the check run or suite reached `checks` (its latest completed_at / updated_at / started_at). */
  checksAt?: Date
  reviewDecision?: 'REVIEW_REQUIRED' | 'APPROVED' | 'CHANGES_REQUESTED'
  /** review.submitted_at, or for a review request the pull request's updated_at. */
  reviewDecisionAt?: Date
}

export class MalformedPayload extends Error {}

interface PullRequestPayload {
  number: number
  html_url: string
  title: string
  state: string
  merged?: boolean
  merged_at?: string | null
  draft?: boolean
  mergeable_state?: string | null
  updated_at?: string | null
  head: { ref: string }
}

const str = (v: unknown): v is string => typeof v === 'string'
const num = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v)

/**
 * A GitHub timestamp (ISO 8601) as a Date; undefined when absent. A present but unreadable one is
 * malformed: taking it as "no time" would let that delivery past the ordering check.
 */
function time(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null) return undefined
  const at = str(value) ? new Date(value) : undefined
  if (!at || Number.isNaN(at.getTime())) throw new MalformedPayload(`${field} is not a timestamp`)
  return at
}

/** The latest of the times a payload object carries: the moment of the last change it describes. */
function latest(object: Record<string, unknown>, fields: string[], prefix: string): Date | undefined {
  const times = fields.map((field) => time(object[field], `${prefix}.${field}`)).filter((at) => at !== undefined)
  return times.length === 0 ? undefined : new Date(Math.max(...times.map((at) => at.getTime())))
}

function repositoryName(body: Record<string, unknown>): string {
  const name = (body.repository as { full_name?: unknown } | undefined)?.full_name
  if (!str(name)) throw new MalformedPayload('repository.full_name missing')
  return name
}

function pullRequestDetails(pr: unknown): { number: number; details: NonNullable<PullRequestChange['details']> } {
  const p = pr as Partial<PullRequestPayload> | undefined
  if (!p || !num(p.number) || !str(p.html_url) || !str(p.title) || !str(p.state) || !str(p.head?.ref))
    throw new MalformedPayload('pull_request fields missing')
  const merged = p.merged === true || (str(p.merged_at) && p.merged_at.length > 0)
  return {
    number: p.number,
    details: {
      url: p.html_url,
      title: p.title,
      headBranch: p.head.ref,
      state: merged ? 'MERGED' : p.state === 'closed' ? 'CLOSED' : 'OPEN',
      draft: p.draft === true,
      mergeableState: str(p.mergeable_state) ? p.mergeable_state : null,
      at: time(p.updated_at, 'pull_request.updated_at'),
    },
  }
}

/** GitHub's check status and conclusion → our checks state. */
function checksOf(status: unknown, conclusion: unknown): PullRequestChange['checks'] {
  if (status !== 'completed') return 'PENDING'
  return conclusion === 'success' || conclusion === 'neutral' || conclusion === 'skipped' ? 'SUCCESS' : 'FAILURE'
}

/** One delivery's repository and the pull-request changes it describes. */
export interface PullRequestDelivery {
  repository: string
  changes: PullRequestChange[]
}

/** What one delivery describes; `undefined` for events this server ignores. */
export function pullRequestDelivery(event: string, body: Record<string, unknown>): PullRequestDelivery | undefined {
  switch (event) {
    case 'pull_request': {
      const { number, details } = pullRequestDetails(body.pull_request)
      const repository = repositoryName(body)
      const change: PullRequestChange = { repository, number, details }
      if (body.action === 'review_requested') {
        change.reviewDecision = 'REVIEW_REQUIRED'
        change.reviewDecisionAt = details.at
      }
      return { repository, changes: [change] }
    }
    case 'pull_request_review': {
      const { number, details } = pullRequestDetails(body.pull_request)
      const repository = repositoryName(body)
      const review = (body.review ?? {}) as { state?: unknown; submitted_at?: unknown }
      const state = String(review.state ?? '').toLowerCase()
      const reviewDecision = state === 'approved' ? 'APPROVED' : state === 'changes_requested' ? 'CHANGES_REQUESTED' : undefined
      const reviewDecisionAt = time(review.submitted_at, 'review.submitted_at')
      return { repository, changes: [{ repository, number, details, ...(reviewDecision && { reviewDecision, reviewDecisionAt }) }] }
    }
    case 'check_suite':
    case 'check_run': {
      const check = body[event] as { status?: unknown; conclusion?: unknown; pull_requests?: unknown } | undefined
      if (!check || !Array.isArray(check.pull_requests)) throw new MalformedPayload(`${event}.pull_requests missing`)
      const repository = repositoryName(body)
      const checks = checksOf(check.status, check.conclusion)
      // A run has started_at / completed_at, a suite created_at / updated_at: the latest present
      // is when the check reached the status this delivery reports.
      const checksAt = latest(check, ['completed_at', 'updated_at', 'started_at', 'created_at'], event)
      const changes = check.pull_requests.map((pr: { number?: unknown }) => {
        if (!num(pr.number)) throw new MalformedPayload('pull_requests[].number missing')
        return { repository, number: pr.number, checks, checksAt }
      })
      return { repository, changes }
    }
    default:
      return undefined
  }
}
