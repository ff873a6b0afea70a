import type { Logger } from '../observability/logger.ts'
import type { Projector } from '../projector/projector.ts'
import type { PubSub, SessionEventPayload } from '../pubsub/pubsub.ts'
import type { Store } from '../store/store.ts'
import { strandedSessions } from '../store/sessions.ts'
import { closeInterruptedWork, sessionsWithOpenWork, sessionsWithQueuedPrompts } from '../store/turns.ts'
import { AGENT_ACTIVITY, LIVE_SESSION_STATES, takeOverAllSessions, takeOverExpiredSessions } from '../store/instances.ts'
import { echoed } from '../errors.ts'
import type { InterruptionReason } from '../summary/types.ts'
import { raise } from '../store/events.ts'

export interface RecoverableSession {
  id: string
  agentProfile: string
}

export interface RecoveryOptions {
  store: Store
  logger: Logger
  /** Profiles this server can relaunch; a session of another profile ends FAILED. */
  resumableProfiles: ReadonlySet<string>
  /** Subscribers elsewhere (Redis) learn of each closed turn and final message; absent, nothing is published. */
  pubsub?: PubSub
  /**
   * Sessions whose queued prompts recovery kept, to be dispatched by this instance (their owner
   * now) in the background: recovery does not wait for it. Absent, they wait for the next launch.
   */
  dispatchQueued?: (sessionIds: string[]) => void
}

/** States a recovered session waits for input in: its queued prompts are kept for its next agent. */
const WAITS_FOR_INPUT = ['WAITING_FOR_INPUT', 'IDLE']

/**
 * Recovers sessions whose agent process died with the server process that ran it: at startup,
 * and for a takeover of a dead instance's sessions. Every turn it left open closes as
 * interrupted, except the prompts queued behind them and never dispatched, which stay queued
 * (in sessions that wait for input once recovered) and go to `dispatchQueued`; every partial
 * message gets its final status, every pending request nobody can answer is cancelled; then
 * sessions left STARTING or RUNNING become WAITING_FOR_INPUT (relaunched on demand, or at once
 * for their queued prompts), or FAILED when their profile is gone; whatever its state, every
 * session's subagents and background work end (no agent carries them any more). Bounded: a
 * fixed number of statements per batch of sessions, whatever their turns and messages. Each write emits its
 * source events, so the summaries re-derive through the projector as for any other write.
 * `reason` is how the turns were cut off (the summary's interruption): SERVER_RESTART at
 * startup, OWNER_LOST when an instance recovers sessions its owner lost.
 */
export async function recoverSessions(options: RecoveryOptions, sessions: readonly RecoverableSession[], reason: InterruptionReason) {
  const { store } = options
  const ids = [...new Set(sessions.map((s) => s.id))]
  if (ids.length === 0) return { resumed: 0, failed: 0, clearedActivity: 0, closedTurns: 0, finalizedMessages: 0, queuedSessions: 0 }
  const profiles = new Map(sessions.map((s) => [s.id, s.agentProfile]))
  const resumable = ids.filter((id) => options.resumableProfiles.has(profiles.get(id)!))
  const orphans = new Map<string, string[]>()
  for (const id of ids) {
    const profile = profiles.get(id)!
    if (!options.resumableProfiles.has(profile)) orphans.set(profile, [...(orphans.get(profile) ?? []), id])
  }
  // Only these states claim a live agent, so only they are reset; a stopped or failed session keeps its state.
  const live = { state: { in: LIVE_SESSION_STATES } }
  // Whatever their state, no agent carries their subagents or background work any more.
  const active = { OR: AGENT_ACTIVITY }
  // Read before writing: updateMany returns counts, and these rows name the sessions that change.
  const rows = await store.db.session.findMany({
    where: { id: { in: ids } },
    select: { id: true, taskId: true, state: true, activeSubagentCount: true, backgroundWork: true, task: { select: { workspaceId: true } } },
  })
  const changing = rows.filter((s) => LIVE_SESSION_STATES.includes(s.state) || s.activeSubagentCount !== 0 || s.backgroundWork)
  // Sessions that wait for input once recovered keep their never-dispatched prompts for their next
  // agent; a stopped or failed one, or one whose profile is gone, has nobody to run them: they close.
  const resumableIds = new Set(resumable)
  const keepQueued = rows
    .filter((s) => resumableIds.has(s.id) && (LIVE_SESSION_STATES.includes(s.state) || WAITS_FOR_INPUT.includes(s.state)))
    .map((s) => s.id)
  const closed = await closeInterruptedWork(store, ids, reason, keepQueued)
  const at = store.now()
  const idle = { activeSubagentCount: 0, backgroundWork: false, updatedAt: at }
  await store.db.$transaction(async (tx) => {
    if (resumable.length > 0)
      await tx.session.updateMany({ where: { id: { in: resumable }, ...live }, data: { state: 'WAITING_FOR_INPUT', ...idle } })
    for (const [profile, orphanIds] of orphans)
      await tx.session.updateMany({
        where: { id: { in: orphanIds }, ...live },
        data: {
          state: 'FAILED',
          ...idle,
          errorCode: 'agent_unavailable',
          errorMessage: `Agent profile ${echoed(profile)} is not configured on this server.`,
          // One stamp per recovery run: a stamp only has to differ from the session's own earlier ones.
          errorStamp: `recovery:${at.toISOString()}`,
          errorOccurredAt: at,
        },
      })
    // The rest (waiting, stopped, failed sessions whose agent ran subagents): their activity ends, their state stays.
    await tx.session.updateMany({ where: { id: { in: ids }, ...active }, data: idle })
  })
  for (const s of changing)
    raise(store, { kind: 'session.changed', taskId: s.taskId, workspaceId: s.task.workspaceId, sessionId: s.id })
  const reset = changing.filter((s) => LIVE_SESSION_STATES.includes(s.state))

  const publish = (payload: SessionEventPayload) =>
    options.pubsub?.publish('session', payload.sessionId, payload).catch((error: unknown) =>
      options.logger.warn({ err: error, sessionId: payload.sessionId }, 'session event publish failed'),
    )
  // The replaceable updates first: a semantic event of a session is a barrier that flushes them.
  // Only statuses changed: followers of appends keep their copy of the content.
  for (const m of closed.messages)
    void publish({ type: 'MessageUpdated', sessionId: m.sessionId, messageId: m.id, version: m.version, contentUnchanged: true })
  for (const t of closed.turns) void publish({ type: 'TurnCompleted', sessionId: t.sessionId, turnId: t.id })
  const failedIds = new Set([...orphans.values()].flat())
  for (const s of reset)
    void publish({ type: 'SessionStateChanged', sessionId: s.id, state: failedIds.has(s.id) ? 'FAILED' : 'WAITING_FOR_INPUT' })

  const failed = reset.filter((s) => failedIds.has(s.id)).length
  // Their owner is this instance now (its claim came first): it alone dispatches them.
  const queued = await sessionsWithQueuedPrompts(store, keepQueued)
  if (queued.length > 0) options.dispatchQueued?.(queued)
  return {
    resumed: reset.length - failed,
    failed,
    clearedActivity: changing.length - reset.length,
    closedTurns: closed.turns.length,
    finalizedMessages: closed.messages.length,
    queuedSessions: queued.length,
  }
}

/**
 * After a restart no agent process of this instance survives, but other instances may be
 * running theirs: only sessions whose owner's lease has expired (or that no owner claims while
 * live) are taken over and recovered. When this process is the database's only server (SQLite's
 * lock), every session left STARTING or RUNNING, with subagents or background work, or with
 * open work is, whatever its owner row says (the old process's lease may not have run out yet). Then every persisted summary is
 * reconciled. Readiness waits for all of it.
 */
export async function recoverAfterRestart(options: RecoveryOptions & { projector: Projector; exclusive?: boolean; instanceId: string }) {
  const { store, projector, logger } = options
  const { claimed } = await takeOverExpiredSessions(store, options.instanceId, { unowned: true })
  const stranded: RecoverableSession[] = [...claimed]
  if (options.exclusive) {
    const open = [...(await strandedSessions(store)), ...(await sessionsWithOpenWork(store))]
    await takeOverAllSessions(store, options.instanceId, open.map((s) => s.id))
    stranded.push(...open)
  }
  const recovered = await recoverSessions(options, stranded, 'SERVER_RESTART')
  await projector.idle()
  const reconciledTasks = await projector.reconcileAll()
  await projector.idle()
  const repairedSessions = recovered.resumed + recovered.failed
  logger.info({ repairedSessions, ...recovered, reconciledTasks }, 'startup recovery finished')
  return { repairedSessions, reconciledTasks, ...recovered }
}
