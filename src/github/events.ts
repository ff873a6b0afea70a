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
  }
  checks?: 'PENDING' | 'SUCCESS' | 'FAILURE'
  reviewDecision?: 'REVIEW_REQUIRED' | 'APPROVED' | 'CHANGES_REQUESTED'
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
  head: { ref: string }
}

const str = (v: unknown): v is string => typeof v === 'string'
const num = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v)

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
      if (body.action === 'review_requested') change.reviewDecision = 'REVIEW_REQUIRED'
      return { repository, changes: [change] }
    }
    case 'pull_request_review': {
      const { number, details } = pullRequestDetails(body.pull_request)
      const repository = repositoryName(body)
      const state = String((body.review as { state?: unknown } | undefined)?.state ?? '').toLowerCase()
      const reviewDecision = state === 'approved' ? 'APPROVED' : state === 'changes_requested' ? 'CHANGES_REQUESTED' : undefined
      return { repository, changes: [{ repository, number, details, ...(reviewDecision && { reviewDecision }) }] }
    }
    case 'check_suite':
    case 'check_run': {
      const check = body[event] as { status?: unknown; conclusion?: unknown; pull_requests?: unknown } | undefined
      if (!check || !Array.isArray(check.pull_requests)) throw new MalformedPayload(`${event}.pull_requests missing`)
      const repository = repositoryName(body)
      const checks = checksOf(check.status, check.conclusion)
      const changes = check.pull_requests.map((pr: { number?: unknown }) => {
        if (!num(pr.number)) throw new MalformedPayload('pull_requests[].number missing')
        return { repository, number: pr.number, checks }
      })
      return { repository, changes }
    }
    default:
      return undefined
  }
}
