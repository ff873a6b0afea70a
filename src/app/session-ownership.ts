import type { Config } from '../config/config.ts'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import type { Store } from '../store/store.ts'
import { otherInstancesExist, sessionsOwnedWithOpenWork } from '../store/instances.ts'
import type { Scheduler } from '../util/scheduler.ts'
import { SessionService } from '../agents/session-service.ts'
import { agentProfiles } from '../agents/profiles.ts'
import { createAgentMetrics } from '../agents/agent-metrics.ts'
import { AgentWatchdog } from '../agents/watchdog/agent-watchdog.ts'
import { GitMonitor } from '../git/monitor.ts'
import { InstanceLease } from '../instances/instance-lease.ts'
import { CommandBus } from '../instances/command-bus.ts'
import { SessionCommands } from '../instances/session-commands.ts'
import { createInstanceMetrics } from '../instances/instance-metrics.ts'
import { takeOverExpired } from '../instances/takeover.ts'
import { recoverSessions } from '../recovery/startup-recovery.ts'

/**
 * This instance's agents and the sessions it owns: the agent processes, the Git monitor of their
 * working trees, the lease that proves ownership, and the commands carried out here or forwarded
 * to a session's owner. Started here; `recovery` is what startup recovery needs of it.
 */
export async function startSessionOwnership(
  config: Config,
  deps: { store: Store; pubsub: PubSub; logger: Logger; metrics: Metrics; instanceId: string; scheduler?: Scheduler },
) {
  const { store, pubsub, logger, metrics, instanceId } = deps
  const profiles = agentProfiles(config.agentProfiles)
  // Ends the agents should this process stall past its lease or die (started with the first agent).
  const watchdog = new AgentWatchdog({ logger })
  const sessions = new SessionService({
    store,
    pubsub,
    logger,
    metrics: createAgentMetrics(metrics.registry),
    profiles,
    scheduler: deps.scheduler,
    instanceId,
    watchdog,
    leaseHeld: () => lease.valid,
  })

  const git = new GitMonitor({ store, pubsub, logger, liveSessions: () => sessions.liveSessionIds() })
  git.start()

  // Ownership: a lease renewed while this process lives; commands for sessions owned elsewhere go there.
  const instanceMetrics = createInstanceMetrics(metrics.registry, () => sessions.liveSessionIds().length)
  // Prompts a dead process left queued go out from here (their owner now), after each recovery, in the background.
  const recovery = { store, logger, pubsub, resumableProfiles: new Set(profiles.keys()), dispatchQueued: (ids: string[]) => sessions.dispatchStoredPrompts(ids) }
  // The SQLite lock proves this server alone: its own lease must never end its own sessions.
  const exclusive = config.databaseProvider === 'sqlite'
  // Alone on the file, the only other instances are processes that ran on it before this one: once
  // a takeover pass has left none of their rows, no later pass can find anything, so the heartbeat
  // stops spending a statement on it (an idle server's heartbeat is then its renewal alone).
  let othersMayExist = true
  const lease: InstanceLease = new InstanceLease(instanceId, {
    store,
    logger,
    leaseMs: config.sessionLeaseMs,
    deadlines: watchdog,
    exclusive,
    hooks: {
      runningSessions: () => sessions.liveSessionIds(),
      abandon: (ids) => sessions.abandon(ids),
      leaseLost: () => sessions.abandon(sessions.liveSessionIds()),
      // This instance's own lease lapsed and its agents ended: the owner lost the sessions it ran.
      recoverOwned: async () => void (await recoverSessions(recovery, await sessionsOwnedWithOpenWork(store, instanceId), 'OWNER_LOST')),
      afterRenewal: async () => {
        if (!othersMayExist) return
        await takeOverExpired({ ...recovery, instanceId, metrics: instanceMetrics, git, reason: 'lease' })
        if (exclusive) othersMayExist = await otherInstancesExist(store, instanceId)
      },
    },
  })
  await lease.register()
  lease.start()
  const bus = new CommandBus({ pubsub, instanceId, logger })
  const commands = new SessionCommands({
    store,
    service: sessions,
    git,
    bus,
    instanceId,
    logger,
    metrics: instanceMetrics,
    forwardTimeoutMs: config.forwardTimeoutMs,
    ownerCheckMs: Math.max(50, Math.min(1000, Math.floor(config.sessionLeaseMs / 10))),
    leaseValid: () => lease.valid,
    recover: (claimed) => recoverSessions(recovery, claimed, 'OWNER_LOST'),
  })
  commands.start()
  return { profiles, watchdog, sessions, git, lease, bus, commands, recovery }
}
