// Launching a session's agent process: a new session's first launch (failures before the session
// exists become the task's launch error) and the relaunch of an existing session's agent (after a
// restart, a stop or a crash). What runs the launched agent is SessionService's.
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import type { AgentProfile } from '../config/config.ts'
import type { Logger } from '../observability/logger.ts'
import type { Store } from '../store/store.ts'
import type { AgentWatchdog } from './watchdog/agent-watchdog.ts'
import type { RecoveryAction } from '../summary/types.ts'
import { clearLaunchError, setLaunchError } from '../store/launch-errors.ts'
import { getSession, setSessionError, updateSession } from '../store/sessions.ts'
import { completeTurn, startTurn } from '../store/turns.ts'
import { getTaskWithRepositories } from '../store/tasks.ts'
import { AgentLaunchError, AgentProcess } from './agent-process.ts'
import { branchExists } from './launch-checks.ts'
import { echoed } from '../errors.ts'
import { SessionOperationError } from './session-operation-error.ts'

export interface LaunchDeps {
  store: Store
  logger: Logger
  profiles: Map<string, AgentProfile>
  watchdog?: AgentWatchdog
}

/**
 * The agent of a session about to be created (its id is the one the agent is launched under).
 * A failure before the session exists is recorded as the task's launch error and thrown.
 */
export async function launchNewAgent(deps: LaunchDeps, input: { taskId: string; agentProfile: string }) {
  const task = await getTaskWithRepositories(deps.store, input.taskId)
  const profile = deps.profiles.get(input.agentProfile)
  if (!profile)
    return launchFailed(deps, task.id, null, 'unknown_agent_profile', `Unknown agent profile ${echoed(input.agentProfile)}.`, ['RETRY_DEFAULT'], 'BAD_USER_INPUT')
  for (const repository of task.repositories)
    if (repository.localPath && repository.baseBranch && !(await branchExists(repository.localPath, repository.baseBranch)))
      return launchFailed(
        deps,
        task.id,
        repository.id,
        'missing_base_branch',
        `Base branch ${echoed(repository.baseBranch)} does not exist in ${echoed(repository.name)}.`,
        ['PICK_BASE_BRANCH', 'RETRY_DEFAULT'],
        'BAD_USER_INPUT',
      )
  const cwd = task.repositories.find((r) => r.localPath)?.localPath ?? mkdtempSync(path.join(os.tmpdir(), 'tss-session-'))
  const sessionId = randomUUID()
  try {
    const agent = await AgentProcess.launch({ profile, cwd, logger: deps.logger, sessionId, watchdog: deps.watchdog })
    return { task, agent, sessionId, cwd }
  } catch (error) {
    if (!(error instanceof AgentLaunchError)) throw error
    logLaunchFailure(deps, input.agentProfile, error, { taskId: task.id })
    // The caller's input was valid: the agent (or its profile, the operator's) failed.
    return launchFailed(deps, task.id, null, error.code, error.message, ['RETRY_DEFAULT'], 'CONFLICT')
  }
}

/** An agent that would not start, with its own reason (no transcript exists yet at launch): the operator's to read. */
function logLaunchFailure(deps: LaunchDeps, profile: string, error: AgentLaunchError, ids: { taskId?: string; sessionId?: string }): void {
  deps.logger.warn({ ...ids, profile: echoed(profile), category: error.code, action: 'agent.launch_failed' }, error.message)
}

async function launchFailed(
  deps: LaunchDeps,
  taskId: string,
  taskRepositoryId: string | null,
  category: string,
  message: string,
  actions: RecoveryAction[],
  code: 'BAD_USER_INPUT' | 'CONFLICT',
): Promise<never> {
  const stamp = randomUUID()
  await setLaunchError(deps.store, taskId, { stamp, message, category, recoveryActions: actions, taskRepositoryId })
  deps.logger.info({ taskId, category, action: 'session.launch' }, 'launch failed before a session existed')
  throw new SessionOperationError(code, message, { launchError: { category, stamp, recoveryActions: actions } })
}

/** The session columns of what the agent published when its session was created or loaded (only what it sent). */
export function publishedFields(agent: AgentProcess) {
  const { models, currentModeId } = agent.published
  return {
    ...(models && { currentModelId: models.currentModelId, availableModels: models.availableModels }),
    ...(currentModeId !== undefined && { currentModeId }),
  }
}

/**
 * Relaunches an existing session's agent, resuming its ACP session: that records a lifecycle-only
 * turn, which moves no activity time. A failed launch leaves the session FAILED with its error.
 * `publishState` tells the session's subscribers of each state it passes through.
 */
export async function relaunchAgent(deps: LaunchDeps, sessionId: string, publishState: (state: string) => void): Promise<AgentProcess> {
  const { store } = deps
  const session = await getSession(store, sessionId)
  const profile = deps.profiles.get(session.agentProfile)
  if (!profile) throw new SessionOperationError('CONFLICT', `Agent profile ${echoed(session.agentProfile)} is not configured.`)
  // A fresh agent carries no subagents or background work of the one before it.
  await updateSession(store, sessionId, { state: 'STARTING', activeSubagentCount: 0, backgroundWork: false })
  publishState('STARTING')
  const cwd = session.workingDirectory ?? mkdtempSync(path.join(os.tmpdir(), 'tss-session-'))
  const boot = await startTurn(store, { sessionId, lifecycleOnly: true })
  let agent: AgentProcess
  try {
    agent = await AgentProcess.launch({
      profile,
      cwd,
      logger: deps.logger,
      resumeAcpSessionId: session.acpSessionId,
      sessionId,
      watchdog: deps.watchdog,
    })
  } catch (error) {
    if (error instanceof AgentLaunchError) logLaunchFailure(deps, session.agentProfile, error, { sessionId })
    await completeTurn(store, boot.id, 'agent_boot_failed')
    await setSessionError(store, sessionId, { code: 'agent_start_failed', message: (error as Error).message, stamp: randomUUID(), occurredAt: store.now() })
    await updateSession(store, sessionId, { state: 'FAILED' })
    publishState('FAILED')
    throw new SessionOperationError('CONFLICT', `The agent could not be started: ${(error as Error).message}`)
  }
  await completeTurn(store, boot.id, 'agent_boot')
  await updateSession(store, sessionId, { acpSessionId: agent.acpSessionId, state: 'WAITING_FOR_INPUT', ...publishedFields(agent) })
  await clearLaunchError(store, session.taskId)
  publishState('WAITING_FOR_INPUT')
  return agent
}
