import type { DeliveryTrace } from '../observability/tracing.ts'

/**
 * What a workspace feed subscription tells the delivery gateway about its events, beside their
 * GraphQL results (which carry a position only if the document selects `cursor`). The gateway puts
 * one in the context of each feed subscription that joins a cohort (src/delivery/cohorts.ts).
 */
export interface FeedTap {
  /** Set by the gateway: serve the replay after `after` only, then end (a resumed cohort member's own execution). */
  replayOnly?: boolean
  /** Set by the gateway: the cohort's shared live execution, started on behalf of a resumed member. */
  shared?: boolean
  /** Set by the feed: the position of the event last handed to execution (undefined: it has none). */
  sequence?: number
  /** Set by a replay-only feed: every position up to this one is covered by its replay (or its resync). */
  replayedUpTo?: number
  /** Set by the shared live execution's feed: the last position it sent or covered (every later one comes through it). */
  covered?: number
  /**
   * Set by the cohort for a resumed member, before its replay starts: the shared execution's
   * `covered`. A cursor at exactly that position has nothing to replay, so it reads nothing.
   */
  liveCovered?: () => number | undefined
  /** Set by the feed, tracing on: the delivery of the event last handed to execution (its cohort's fan-out continues it). */
  trace?: DeliveryTrace
}
