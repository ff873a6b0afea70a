import type { Store } from '../store/store.ts'
import { findPullRequest, findTaskRepositoryOfPullRequest } from '../store/pull-requests.ts'
import { applyObservedPullRequest, type ObservationOutcome } from '../store/pull-request-sources.ts'
import type { PullRequestChange } from './events.ts'

const timed = ({ at, ...value }: NonNullable<PullRequestChange['details']>) => ({ value, at })

/**
 * Merges one change into the workspace's observation of that pull request (keyed by workspace +
 * repository + number) and links it to the workspace's task repository with the same name and
 * head branch. A change without the pull request's details (a check run) only updates a pull
 * request the workspace already knows. Each part is applied only when it is not older than the
 * stored one (store/pull-request-sources.ts). The caller has checked that the workspace links the
 * repository.
 */
export async function applyPullRequestChange(store: Store, workspaceId: string, change: PullRequestChange): Promise<ObservationOutcome> {
  const { details, checks, checksAt, reviewDecision, reviewDecisionAt } = change
  // The head branch never changes for a pull request, so linking does not depend on the order of
  // deliveries; this read only finds the branch of a checks-only change.
  const headBranch = details?.headBranch ?? (await findPullRequest(store, workspaceId, change.repository, change.number))?.headBranch
  if (headBranch === undefined) return 'unknown'
  const linked = await findTaskRepositoryOfPullRequest(store, workspaceId, change.repository, headBranch)
  return applyObservedPullRequest(store, {
    workspaceId,
    repository: change.repository,
    number: change.number,
    ...(details && { details: timed(details) }),
    ...(checks && { checks: { value: checks, at: checksAt } }),
    ...(reviewDecision && { reviewDecision: { value: reviewDecision, at: reviewDecisionAt } }),
    ...(linked && { link: { taskId: linked.taskId, taskRepositoryId: linked.id } }),
  })
}
