// A GitHub delivery's view of one pull request, applied in GitHub's order rather than in the
// order deliveries arrive. Each part of the observation (the pull request's own fields, its
// checks, its review decision) keeps the GitHub time it was taken at, and is replaced only by a
// part that is not older: a captured delivery replayed under a new delivery id, or a late
// redelivery, changes nothing. Every part is one conditional UPDATE (the comparison happens in
// the database, in the same statement as the write), so two instances applying deliveries of the
// same pull request concurrently cannot interleave a read and a write and let the older one win.
import type { Prisma } from '../generated/sqlite/client.ts'
import type { Store } from './store.ts'
import { repositoryKey } from './github-links.ts'
import { raise } from './events.ts'

type PullRequestState = 'OPEN' | 'CLOSED' | 'MERGED'
type Checks = 'PENDING' | 'SUCCESS' | 'FAILURE'
type ReviewDecision = 'REVIEW_REQUIRED' | 'APPROVED' | 'CHANGES_REQUESTED'

/** One part of an observation and GitHub's time for it (absent when the payload had none). */
export interface Timed<T> {
  value: T
  at: Date | undefined
}

export interface ObservedPullRequest {
  workspaceId: string
  repository: string
  number: number
  details?: Timed<{ url: string; title: string; headBranch: string; state: PullRequestState; draft: boolean; mergeableState: string | null }>
  checks?: Timed<Checks>
  reviewDecision?: Timed<ReviewDecision>
  /** The task repository it belongs to, when one matches; written with whichever part applies. */
  link?: { taskId: string; taskRepositoryId: string }
}

/**
 * applied: some part changed. stale: the pull request is stored and every part of the delivery
 * was older than what is stored. unknown: nothing stored to apply a checks-only change to.
 * unlinked: the workspace no longer links the repository (unlinked meanwhile).
 */
export type ObservationOutcome = 'applied' | 'stale' | 'unknown' | 'unlinked'

type Where = Prisma.PullRequestObservationWhereInput
type TimeField = 'sourceUpdatedAt' | 'checksSourceAt' | 'reviewSourceAt'

/**
 * The stored part may be replaced: it has no time (stored before times were kept, or from a
 * payload without one) or its time is not after the incoming one. Equal times apply: GitHub
 * stamps updated_at in whole seconds and sends several deliveries for one change with the same
 * value (a merge's `closed` and the events around it, a label and a review request), and the one
 * that arrives last is the one to keep. Refusing equal times would drop those legitimately; what
 * an equal-time replay could still undo is guarded separately (a merge is never undone, below).
 * An incoming part without a time replaces only a part without one: it cannot prove it is newer.
 */
function notNewer(field: TimeField, at: Date | undefined): Where {
  return at ? { OR: [{ [field]: null }, { [field]: { lte: at } }] } : { [field]: null }
}

const FOREIGN_KEY_VIOLATION = 'P2003'
const UNIQUE_VIOLATION = 'P2002'
const codeOf = (error: unknown) => (error as { code?: string }).code

export async function applyObservedPullRequest(store: Store, pr: ObservedPullRequest): Promise<ObservationOutcome> {
  try {
    return await applyParts(store, pr)
  } catch (error) {
    // The link (or the linked task) went away while the delivery was applied: nothing is kept.
    if (codeOf(error) === FOREIGN_KEY_VIOLATION) return 'unlinked'
    throw error
  }
}

async function applyParts(store: Store, pr: ObservedPullRequest): Promise<ObservationOutcome> {
  const { db } = store
  const key = { workspaceId: pr.workspaceId, repository: pr.repository, number: pr.number }
  const stamp = () => ({ updatedAt: store.now(), ...pr.link })
  const update = async (where: Where, data: Prisma.PullRequestObservationUpdateManyMutationInput) =>
    (await db.pullRequestObservation.updateMany({ where: { ...key, ...where }, data: { ...data, ...stamp() } })).count > 0

  let applied = false
  let created = false
  if (pr.details) {
    const { value, at } = pr.details
    // GitHub cannot reopen or unmerge a merged pull request: a state other than MERGED for one
    // stored as MERGED is from before the merge, whatever its time says (an equal-second replay).
    const mergeKept: Where = value.state === 'MERGED' ? {} : { state: { not: 'MERGED' } }
    const applyDetails = () => update({ AND: [notNewer('sourceUpdatedAt', at), mergeKept] }, { ...value, sourceUpdatedAt: at ?? null })
    applied = await applyDetails()
    if (!applied) {
      try {
        await db.pullRequestObservation.create({
          data: {
            ...key,
            ...value,
            ...stamp(),
            linkedRepository: repositoryKey(pr.repository),
            sourceUpdatedAt: at ?? null,
            checks: pr.checks?.value ?? 'NONE',
            checksSourceAt: pr.checks?.at ?? null,
            reviewDecision: pr.reviewDecision?.value ?? null,
            reviewSourceAt: pr.reviewDecision?.at ?? null,
          },
        })
        applied = created = true
      } catch (error) {
        if (codeOf(error) !== UNIQUE_VIOLATION) throw error
        // Stored already: by a concurrent delivery since the update above (try once more against
        // what it stored), or before, and then this delivery's details are older.
        applied = await applyDetails()
      }
    }
  }
  if (!created && pr.checks)
    applied = (await update(notNewer('checksSourceAt', pr.checks.at), { checks: pr.checks.value, checksSourceAt: pr.checks.at ?? null })) || applied
  if (!created && pr.reviewDecision)
    applied =
      (await update(notNewer('reviewSourceAt', pr.reviewDecision.at), {
        reviewDecision: pr.reviewDecision.value,
        reviewSourceAt: pr.reviewDecision.at ?? null,
      })) || applied

  const row = await db.pullRequestObservation.findUnique({ where: { workspaceId_repository_number: key }, select: { taskId: true } })
  if (!row) return 'unknown'
  if (!applied) return 'stale'
  if (row.taskId) raise(store, { kind: 'pullRequest.observed', taskId: row.taskId, workspaceId: pr.workspaceId })
  return 'applied'
}
