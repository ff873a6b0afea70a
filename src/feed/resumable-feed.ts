import type { Logger } from '../observability/logger.ts'
import type { PubSub, SummaryUpdatedPayload, WorkspaceEventPayload } from '../pubsub/pubsub.ts'
import { feedChangesBetween, feedHead, type FeedHead } from '../store/feed.ts'
import type { TaskRow } from '../store/rows.ts'
import type { Store } from '../store/store.ts'
import type { FeedPosition } from './cursor.ts'
import type { FeedMetrics } from './feed-metrics.ts'
import { replayItems } from './replay-items.ts'
import { asyncIterableIterator } from '../util/async-iterators.ts'

/** What a feed subscriber is sent: live payloads, and replayed ones that carry the row they read. */
export type FeedItem =
  | { type: 'TaskUpserted'; workspaceId: string; taskId: string; sequence: number; task?: TaskRow }
  | { type: 'TaskDeleted'; workspaceId: string; taskId: string; sequence: number }
  | SummaryUpdatedPayload
  /** `sequence`: the position live events continue after, when known. */
  | { type: 'WorkspaceResync'; workspaceId: string; reason: string; sequence?: number }

export interface FeedServices {
  store: Store
  pubsub: PubSub
  logger: Logger
  metrics: FeedMetrics
  /** This database's feed identity (ensureFeedEpoch). */
  epoch: string
}

export interface OpenFeedOptions {
  /** Resume after this position: the tasks changed since, each once in its latest state, then live. */
  after?: FeedPosition
  /**
   * The summary-only feed (taskStatusSummaryUpdated): no task rows, deletions or resyncs, which
   * its type cannot carry; a cursor of another database replays every current summary instead.
   */
  summariesOnly?: boolean
  /**
   * The subscriber's TaskUpserted selects the task's summary with all its TaskStatusSummaryUpdated
   * selects: a resume then sends a task whose row changed as its TaskUpserted alone (replay-items.ts).
   */
  upsertCarriesSummary?: boolean
  /**
   * Serve the replay after `after` only, then end, without subscribing to live events; the
   * position it covers (its head) is written to `upTo` before the first item. A resumed cohort
   * member's own execution: its live events come from the cohort's shared one.
   */
  replayOnly?: { upTo?: number }
  /**
   * Live only, but positions are tracked from the head read at the start rather than from the first
   * event, so a hole even before that event is filled: what a cohort's shared execution needs, as
   * members resumed at a later head rely on it for every position after theirs.
   */
  fromHead?: boolean
  /** Kept up to date with the last position this feed sent or covered (a cohort's shared execution publishes it to joining members). */
  position?: { covered?: number }
}

export const CURSOR_EXPIRED = 'cursor-expired'

/**
 * One subscriber's workspace feed. Live pub/sub is subscribed first and buffered, the database
 * head read second; a resume replays (after, head] from the database, and live events at or
 * before the head are dropped as covered: no gap and no duplicate at the seam. Afterwards every
 * live event must be the next position: a hole (a lost or reordered pub/sub message, a dropped
 * link, an overflowing subscriber) is filled from the database instead of asking for a resync.
 * Replays send each changed task once, in position order, so a client that keeps the last
 * cursor it received can resume from it whenever it is cut off (once in all, not once per kind
 * of change, when its upsert carries its summary).
 *
 * Like transformIterator, return() reaches the live subscription at once, even mid-replay.
 */
export async function openWorkspaceFeed(
  services: FeedServices,
  workspaceId: string,
  options: OpenFeedOptions = {},
): Promise<AsyncIterableIterator<FeedItem>> {
  const { store, pubsub, logger, metrics } = services
  const live = options.replayOnly
    ? undefined
    : pubsub.subscribe('workspace', workspaceId, {
        onOverflow: () => ({ type: 'WorkspaceResync', workspaceId, reason: 'subscriber fell behind; deltas were dropped' }),
      })
  let pending: FeedItem[] = []
  let done = false
  /** The last position sent or covered by a replay; undefined until a live feed's first event. */
  let delivered: number | undefined
  const cover = (sequence: number) => {
    delivered = sequence
    if (options.position) options.position.covered = sequence
  }

  const close = async () => {
    done = true
    pending = []
    await live?.return?.()
  }

  const replay = async (after: number, upTo: number, reason: 'resume' | 'gap' | 'resync') => {
    if (upTo <= after) return
    const changes = await feedChangesBetween(store, workspaceId, after, upTo)
    // Only a resume folds summaries into upserts. A folded event's position may precede its
    // summary's, and the live replays (gap, resync) of a cohort's shared execution hand each
    // item's position to members, which drop what their own replay covered: one resumed at a
    // head between the two positions would miss that summary.
    const upsertCarriesSummary = reason === 'resume' && options.upsertCarriesSummary
    const items = replayItems(changes, { workspaceId, summariesOnly: options.summariesOnly, upsertCarriesSummary, upTo }, logger)
    metrics.replayed.inc({ reason }, items.length)
    pending.push(...items)
  }

  const expired = (head: FeedHead) => {
    metrics.expired.inc()
    pending.push({ type: 'WorkspaceResync', workspaceId, reason: CURSOR_EXPIRED, sequence: head.sequence })
  }

  const start = async () => {
    const head = (await feedHead(store, workspaceId)) ?? { sequence: 0, floor: 0 }
    const after = options.after
    if (!after) {
      if (options.fromHead) cover(head.sequence)
      return // live only: without fromHead, positions are tracked from the first event
    }
    const foreign = after.epoch !== services.epoch || after.workspaceId !== workspaceId || after.sequence > head.sequence
    // Purged tombstones only matter to the full feed: summaries never expire but with another database.
    const tooOld = !options.summariesOnly && after.sequence < head.floor
    if (foreign && options.summariesOnly) await replay(-1, head.sequence, 'resume') // every current summary
    else if (foreign || tooOld) expired(head)
    else await replay(after.sequence, head.sequence, 'resume')
    cover(head.sequence)
    if (options.replayOnly) options.replayOnly.upTo = head.sequence
  }

  /** Live events in: what the subscriber is sent, holes filled from the database. */
  const receive = async (event: WorkspaceEventPayload) => {
    if (event.type === 'WorkspaceResync') {
      if (delivered === undefined) return void pending.push(event) // nothing to repair from
      const head = (await feedHead(store, workspaceId)) ?? { sequence: delivered, floor: 0 }
      metrics.repairs.inc({ cause: event.reason.startsWith('subscriber fell behind') ? 'overflow' : 'link' })
      if (head.floor > delivered && !options.summariesOnly) expired(head)
      else await replay(delivered, head.sequence, 'resync')
      cover(Math.max(delivered, head.sequence))
      return
    }
    const sequence = event.sequence
    if (!(sequence > 0)) return void pending.push(event) // carries no position (not written through the database)
    if (delivered !== undefined && sequence <= delivered) return // covered by a replay, or a duplicate
    if (delivered !== undefined && sequence > delivered + 1) {
      metrics.repairs.inc({ cause: 'gap' })
      await replay(delivered, sequence - 1, 'gap')
    }
    cover(sequence)
    pending.push(event)
  }

  try {
    await start()
  } catch (error) {
    await close()
    throw error
  }

  return asyncIterableIterator<FeedItem>({
    async next() {
      try {
        for (;;) {
          if (done) return { value: undefined, done: true }
          const item = pending.shift()
          if (item) {
            if (options.summariesOnly && item.type !== 'TaskStatusSummaryUpdated') continue
            return { value: item, done: false }
          }
          const result = live ? await live.next() : { done: true as const, value: undefined }
          if (result.done) {
            done = true
            return { value: undefined, done: true }
          }
          if (!done) await receive(result.value)
        }
      } catch (error) {
        await close()
        throw error
      }
    },
    async return() {
      await close()
      return { value: undefined, done: true }
    },
    async throw(error: unknown) {
      await close()
      throw error
    },
  })
}
