import type { GitMonitor } from '../git/monitor.ts'
import { errorFields } from '../observability/error-fields.ts'
import { recoverSessions, type RecoveryOptions } from '../recovery/startup-recovery.ts'
import { isDatabaseUnavailable } from '../store/db.ts'
import { takeOverExpiredSessions } from '../store/instances.ts'
import { retryWrite } from '../util/retry-write.ts'
import { realScheduler } from '../util/scheduler.ts'
import type { InstanceMetrics } from './instance-metrics.ts'

/**
 * One takeover pass: every session of an instance whose lease expired becomes this instance's
 * (of concurrent passes on several instances, each session goes to one), and is recovered as after a
 * restart: open turns end interrupted, live sessions wait for input (FAILED where the profile is
 * not configured here); each write re-derives the task's summary, which reaches the feed. The
 * agent relaunches here on the next prompt, or at once for prompts the dead owner left queued
 * (dispatched here once, in order). Focus held for the dead instances' connections ends.
 */
export async function takeOverExpired(
  options: RecoveryOptions & { instanceId: string; metrics?: InstanceMetrics; git?: GitMonitor; reason: 'startup' | 'lease' },
) {
  const { claimed, expiredInstances } = await takeOverExpiredSessions(options.store, options.instanceId)
  for (const id of expiredInstances) options.git?.unfocusInstance(id)
  if (claimed.length === 0) return { claimed, recovered: undefined }
  // Their owner lost them: the turns it left open were cut off by that loss, not by a restart here.
  // The claim has committed, so no later pass finds these sessions again: a recovery the database
  // refused for now (a lock wait past lock_timeout, a blip) is tried again (it can run twice).
  const recovered = await retryWrite(() => recoverSessions(options, claimed, 'OWNER_LOST'), {
    scheduler: realScheduler,
    retryable: isDatabaseUnavailable,
    onRetry: (error, attempt) =>
      options.logger.warn({ ...errorFields(error), action: 'instance.takeover', attempt, sessions: claimed.length }, 'recovering taken-over sessions failed, retrying'),
  })
  options.metrics?.takeovers.inc({ reason: options.reason }, claimed.length)
  options.logger.info(
    { action: 'instance.takeover', reason: options.reason, sessions: claimed.length, expiredInstances: expiredInstances.length, ...recovered },
    'took over the sessions of expired instances',
  )
  return { claimed, recovered }
}
