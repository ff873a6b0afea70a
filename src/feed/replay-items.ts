import type { Logger } from '../observability/logger.ts'
import type { feedChangesBetween } from '../store/feed.ts'
import { toStoredSummary } from '../store/summaries.ts'
import type { FeedItem } from './resumable-feed.ts'

export type FeedChanges = Awaited<ReturnType<typeof feedChangesBetween>>

export interface ReplayShape {
  workspaceId: string
  /** The summary-only feed: no task rows or deletions, which its type cannot carry. */
  summariesOnly?: boolean
  /**
   * The subscriber's TaskUpserted carries the task's current summary with everything its
   * TaskStatusSummaryUpdated selects (src/schema/feed-selection.ts): a task whose row changed is
   * then replayed as that one event, its summary revision within it.
   */
  upsertCarriesSummary?: boolean
  /** The end of the replayed range (the feed head it read up to). */
  upTo: number
}

/**
 * The events of a replay of `changes`, in position order: each task once per kind of change, or
 * once in all when its upsert carries its summary. Positions are what the events' cursors say.
 */
export function replayItems(changes: FeedChanges, shape: ReplayShape, logger: Logger): FeedItem[] {
  const { workspaceId } = shape
  const items: FeedItem[] = []
  for (const row of changes.summaries) {
    try {
      const summary = toStoredSummary(row)
      items.push({
        type: 'TaskStatusSummaryUpdated',
        workspaceId,
        taskId: row.taskId,
        revision: summary.revision,
        updatedAt: summary.updatedAt.toISOString(),
        summary: summary.payload,
        sequence: row.feedSequence,
      })
    } catch {
      logger.warn({ taskId: row.taskId }, 'stored summary unreadable; left out of the replay until it is repaired')
    }
  }
  if (shape.summariesOnly) return items.sort(bySequence)
  for (const task of changes.tasks) items.push({ type: 'TaskUpserted', workspaceId, taskId: task.id, sequence: task.feedSequence, task })
  for (const t of changes.tombstones) items.push({ type: 'TaskDeleted', workspaceId, taskId: t.taskId, sequence: t.feedSequence })
  if (!shape.upsertCarriesSummary) return items.sort(bySequence)
  return foldSummaries(items, shape.upTo)
}

const bySequence = (a: FeedItem, b: FeedItem) => a.sequence! - b.sequence!

/**
 * A task edit moves its summary too (its activity time), so a renamed task has a row and a summary
 * position; its TaskUpserted resolves the task's current summary, at least the revision read here,
 * so its TaskStatusSummaryUpdated is left out. The upsert takes the earlier of the two positions:
 * an event stands in the order where its first change was, so a cursor never passes a change not
 * yet sent. And each event's cursor is the position just before the next event's first change
 * (the last one's, the head): everything up to it has been sent, though a folded summary's own
 * position may lie beyond it. A client cut off mid-replay thus resumes without a gap (at worst that
 * summary again, which a client applies only when newer), and one that got it all resumes at the head.
 */
function foldSummaries(items: FeedItem[], upTo: number): FeedItem[] {
  const upserts = new Map<string, FeedItem>()
  for (const item of items) if (item.type === 'TaskUpserted') upserts.set(item.taskId, item)
  const kept: FeedItem[] = []
  for (const item of items) {
    const upsert = item.type === 'TaskStatusSummaryUpdated' ? upserts.get(item.taskId) : undefined
    if (!upsert) kept.push(item)
    else upsert.sequence = Math.min(upsert.sequence!, item.sequence!)
  }
  kept.sort(bySequence)
  for (let i = 0; i < kept.length; i++) kept[i]!.sequence = i + 1 < kept.length ? kept[i + 1]!.sequence! - 1 : upTo
  return kept
}
