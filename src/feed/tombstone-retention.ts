import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import type { Logger } from '../observability/logger.ts'
import { purgeTombstones } from '../store/feed.ts'
import type { Store } from '../store/store.ts'
import type { FeedMetrics } from './feed-metrics.ts'

const HOUR = 3_600_000

/**
 * Forgets tombstones of tasks deleted more than the retention ago, at start and then every
 * quarter of the retention (at most hourly). Any instance may run it: the purge is one
 * transaction that raises the workspaces' floors before it deletes.
 */
export function startTombstoneRetention(options: {
  store: Store
  retentionMs: number
  logger: Logger
  metrics: FeedMetrics
  scheduler?: Scheduler
}): () => void {
  const { store, retentionMs, logger, metrics } = options
  const scheduler = options.scheduler ?? realScheduler
  const interval = Math.max(1000, Math.min(HOUR, retentionMs / 4))
  let timer: unknown
  let stopped = false
  const run = async () => {
    try {
      const purged = await purgeTombstones(store, new Date(store.now().getTime() - retentionMs))
      if (purged > 0) {
        metrics.tombstonesPurged.inc(purged)
        logger.info({ purged }, 'feed tombstones purged')
      }
    } catch (error) {
      logger.warn({ err: error }, 'feed tombstone purge failed; retried at the next interval')
    }
    if (stopped) return
    timer = scheduler.setTimeout(() => void run(), interval)
    // An hourly purge never keeps a process alive that has nothing else to do.
    ;(timer as { unref?: () => void } | undefined)?.unref?.()
  }
  void run()
  return () => {
    stopped = true
    scheduler.clearTimeout(timer)
  }
}
