// Pull-request observations (one per workspace + repository + number, under that workspace's
// link); the deliveries they come from are webhook-deliveries.ts's.
import type { Store } from './store.ts'
import { repositoryKey } from './github-links.ts'
import { raise } from './events.ts'

export interface PullRequestInput {
  workspaceId: string
  repository: string
  number: number
  taskId: string | null
  taskRepositoryId: string | null
  url: string
  title: string
  headBranch: string
  state: 'OPEN' | 'CLOSED' | 'MERGED'
  draft: boolean
  checks: 'NONE' | 'PENDING' | 'SUCCESS' | 'FAILURE'
  reviewDecision: 'REVIEW_REQUIRED' | 'APPROVED' | 'CHANGES_REQUESTED' | null
  mergeableState: string | null
  autoFix?: boolean
  autoMerge?: boolean
  updatedAt?: Date
}

const FOREIGN_KEY_VIOLATION = 'P2003'

/**
 * Keyed by workspace + repository + number; automation flags keep their stored value unless
 * given. `undefined` when the workspace has no link for the repository (it was unlinked while
 * the delivery was applied): the foreign key refuses the row, so nothing is stored.
 */
export async function recordPullRequest(store: Store, pr: PullRequestInput) {
  const { autoFix, autoMerge, ...fields } = { ...pr, linkedRepository: repositoryKey(pr.repository), updatedAt: pr.updatedAt ?? store.now() }
  const key = { workspaceId: pr.workspaceId, repository: pr.repository, number: pr.number }
  try {
    const row = await store.db.pullRequestObservation.upsert({
      where: { workspaceId_repository_number: key },
      create: { ...fields, autoFix: autoFix ?? false, autoMerge: autoMerge ?? false },
      update: { ...fields, ...(autoFix !== undefined && { autoFix }), ...(autoMerge !== undefined && { autoMerge }) },
    })
    if (row.taskId) raise(store, { kind: 'pullRequest.observed', taskId: row.taskId, workspaceId: row.workspaceId })
    return row
  } catch (error) {
    if ((error as { code?: string }).code === FOREIGN_KEY_VIOLATION) return undefined
    throw error
  }
}

export function findPullRequest({ db }: Store, workspaceId: string, repository: string, number: number) {
  return db.pullRequestObservation.findUnique({
    where: { workspaceId_repository_number: { workspaceId, repository, number } },
  })
}

/** The workspace's task repository a pull request belongs to: same full name and head branch. */
export function findTaskRepositoryOfPullRequest({ db }: Store, workspaceId: string, repository: string, headBranch: string) {
  return db.taskRepository.findFirst({
    where: { name: repository, branch: headBranch, task: { workspaceId } },
    orderBy: [{ taskId: 'asc' }, { position: 'asc' }],
  })
}
