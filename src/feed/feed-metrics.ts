import { Counter, type Registry } from 'prom-client'

/** The resumable workspace feed on this instance. */
export function createFeedMetrics(registry: Registry) {
  return {
    replayed: new Counter({
      name: 'feed_replayed_events_total',
      help: 'Feed events sent from the database instead of live pub/sub (reason: resume, gap, resync)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    repairs: new Counter({
      name: 'feed_gap_repairs_total',
      help: 'Holes in a subscriber’s feed sequence (lost or reordered pub/sub messages, a dropped link, an overflowing subscriber) repaired from the database',
      labelNames: ['cause'],
      registers: [registry],
    }),
    expired: new Counter({
      name: 'feed_cursor_expired_total',
      help: 'Resumes answered with WorkspaceResync cursor-expired (older than the retained tombstones, or of another database or workspace)',
      registers: [registry],
    }),
    tombstonesPurged: new Counter({
      name: 'feed_tombstones_purged_total',
      help: 'Tombstones of deleted tasks forgotten after FEED_RETENTION_HOURS',
      registers: [registry],
    }),
  }
}

export type FeedMetrics = ReturnType<typeof createFeedMetrics>
