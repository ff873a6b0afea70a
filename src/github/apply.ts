import type { Store } from '../store/store.ts'
import { findLinkedRepository, findPullRequest, recordPullRequest } from '../store/runtime.ts'
import type { PullRequestChange } from './events.ts'

/**
 * Merges one change into the stored observation of that pull request (keyed by repository +
 * number) and links it to the task repository with the same name and head branch. A change
 * without the pull request's details (a check run) only updates a pull request already known.
 */
export async function applyPullRequestChange(store: Store, change: PullRequestChange) {
  const existing = await findPullRequest(store, change.repository, change.number)
  const details = change.details ?? existing
  if (!details) return undefined
  const linked = await findLinkedRepository(store, change.repository, details.headBranch)
  return recordPullRequest(store, {
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
