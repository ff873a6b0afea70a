import type { GitMonitor } from '../git/monitor.ts'
import { recoverSessions, type RecoveryOptions } from '../recovery/startup-recovery.ts'
import { takeOverExpiredSessions } from '../store/instances.ts'
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
  const recovered = await recoverSessions(options, claimed, 'OWNER_LOST')
  options.metrics?.takeovers.inc({ reason: options.reason }, claimed.length)
  options.logger.info(
    { action: 'instance.takeover', reason: options.reason, sessions: claimed.length, expiredInstances: expiredInstances.length, ...recovered },
    'took over the sessions of expired instances',
  )
  return { claimed, recovered }
}
