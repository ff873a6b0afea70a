import { Kind, print, visit, type DocumentNode, type ExecutionArgs, type FieldNode } from 'graphql'
import type { FeedTap } from '../feed/feed-tap.ts'
import type { CohortSink, Cohorts } from './cohorts.ts'
import type { Results } from './operation-pipeline.ts'

/** Root fields whose events are the same for every authorized subscriber (no viewer-specific data). */
export const MULTIPLEXABLE_FIELDS = new Set(['workspaceEvents', 'taskStatusSummaryUpdated'])

/** How a feed subscription joins its cohort. */
export interface FeedCohortPlan {
  /** Document, operation name and variables without the resume cursor, which is each subscriber's own. */
  key: string
  /** For a resume: the same operation with no cursor, the live execution the cohort shares. */
  live?: { document: DocumentNode; variableValues: Record<string, unknown> | undefined }
}

type Variables = Record<string, unknown> | null | undefined

/**
 * The cohort of a feed subscription (`field` its root field): subscribers that differ only by
 * their `after` (inline or a variable) share one live execution; each one's replay is its own.
 */
export function feedCohortPlan(field: FieldNode, document: DocumentNode, query: string, operationName: string | null | undefined, variables: Variables): FeedCohortPlan {
  const after = field.arguments?.find((a) => a.name.value === 'after')?.value
  const keyOf = (text: string, values: Variables, resumed = true) => JSON.stringify([text, operationName ?? null, values ?? null, resumed])
  // Live-only subscribers share a cohort of their own: their execution tracks positions from its
  // first event, so until then a lost pub/sub link is a WorkspaceResync for them, as alone; the
  // resumed cohort's execution tracks from the feed head, which its members' replays rely on.
  if (!after || after.kind === Kind.NULL) return { key: keyOf(query, variables, false) }
  if (after.kind === Kind.VARIABLE) {
    const { [after.name.value]: cursor, ...others } = variables ?? {}
    const key = keyOf(query, others)
    return cursor == null ? { key: keyOf(query, variables, false) } : { key, live: { document, variableValues: { ...others, [after.name.value]: null } } }
  }
  const live = visit(document, {
    Field: (node) => (node === field ? { ...node, arguments: node.arguments?.filter((a) => a.name.value !== 'after') } : undefined),
  })
  return { key: keyOf(print(live), variables), live: { document: live, variableValues: variables ?? undefined } }
}

/**
 * Joins a feed subscription to its cohort. Each subscriber still subscribes for itself (authorized
 * and counted as its own); a resumed one's own execution serves its replay only.
 */
export function joinFeedCohort(
  cohorts: Cohorts,
  plan: FeedCohortPlan,
  sink: CohortSink,
  args: ExecutionArgs,
  subscribe: (args: ExecutionArgs) => Promise<Results> | Results,
): Promise<Results> {
  const context = args.contextValue as { feedTap?: FeedTap; onWorkspaceScope?: unknown }
  const tap: FeedTap = plan.live ? { replayOnly: true } : {}
  context.feedTap = tap
  if (!plan.live) return cohorts.join(plan.key, () => subscribe(args), sink, { tap })
  const liveTap: FeedTap = { shared: true }
  // A context of its own (it runs beside the member's replay), and no access scope: the member's
  // own subscription holds that; the shared execution ends when its last member leaves.
  const contextValue = { ...context, feedTap: liveTap, onWorkspaceScope: undefined }
  const live: ExecutionArgs = { ...args, document: plan.live.document, variableValues: plan.live.variableValues, contextValue }
  return cohorts.join(plan.key, () => subscribe(args), sink, { tap, live: { subscribe: () => subscribe(live), tap: liveTap } })
}
