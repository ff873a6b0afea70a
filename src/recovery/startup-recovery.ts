import type { Logger } from '../observability/logger.ts'
import type { Projector } from '../projector/projector.ts'
import type { Store } from '../store/store.ts'
import { setSessionError, strandedSessions, updateSession } from '../store/runtime.ts'

/**
 * After a restart no agent process survives: sessions left STARTING or RUNNING become
 * WAITING_FOR_INPUT (relaunched on demand), or FAILED when their profile no longer exists. Each
 * repair is an ordinary store write, so it reaches the summaries through the same source-event
 * path; then every persisted summary is reconciled. Readiness waits for all of it.
 */
export async function recoverAfterRestart(options: {
  store: Store
  projector: Projector
  logger: Logger
  resumableProfiles: ReadonlySet<string>
}): Promise<{ repairedSessions: number; reconciledTasks: number }> {
  const { store, projector, logger } = options
  const stranded = await strandedSessions(store)
  for (const session of stranded) {
    if (options.resumableProfiles.has(session.agentProfile)) {
      await updateSession(store, session.id, { state: 'WAITING_FOR_INPUT', activeSubagentCount: 0, backgroundWork: false })
    } else {
      await setSessionError(store, session.id, {
        code: 'agent_unavailable',
        message: `Agent profile ${session.agentProfile} is not configured on this server.`,
        stamp: `recovery:${session.id}:${store.now().toISOString()}`,
        occurredAt: store.now(),
      })
      await updateSession(store, session.id, { state: 'FAILED', activeSubagentCount: 0, backgroundWork: false })
    }
  }
  await projector.idle()
  const reconciledTasks = await projector.reconcileAll()
  await projector.idle()
  logger.info({ repairedSessions: stranded.length, reconciledTasks }, 'startup recovery finished')
  return { repairedSessions: stranded.length, reconciledTasks }
}
