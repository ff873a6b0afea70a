import type { Store } from '../store/store.ts'
import { findPullRequest, findTaskRepositoryOfPullRequest, recordPullRequest } from '../store/pull-requests.ts'
import type { PullRequestChange } from './events.ts'

/**
 * Merges one change into the workspace's observation of that pull request (keyed by workspace +
 * repository + number) and links it to the workspace's task repository with the same name and
 * head branch. A change without the pull request's details (a check run) only updates a pull
 * request the workspace already knows. The caller has checked that the workspace links the
 * repository.
 */
export async function applyPullRequestChange(store: Store, workspaceId: string, change: PullRequestChange) {
  const existing = await findPullRequest(store, workspaceId, change.repository, change.number)
  const details = change.details ?? existing
  if (!details) return undefined
  const linked = await findTaskRepositoryOfPullRequest(store, workspaceId, change.repository, details.headBranch)
  return recordPullRequest(store, {
    workspaceId,
    repository: change.repository,
    number: change.number,
    url: details.url,
    title: details.title,
    headBranch: details.headBranch,
    state: details.state as 'OPEN' | 'CLOSED' | 'MERGED',
    draft: details.draft,
    mergeableState: details.mergeableState,
    checks: change.checks ?? (existing?.checks as PullRequestChange['checks']) ?? 'NONE',
    reviewDecision: change.reviewDecision ?? (existing?.reviewDecision as PullRequestChange['reviewDecision']) ?? null,
    taskId: linked?.taskId ?? existing?.taskId ?? null,
    taskRepositoryId: linked?.id ?? existing?.taskRepositoryId ?? null,
  })
}
