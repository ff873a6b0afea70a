/**
 * Builders for the pure summary derivation: sensible defaults, overrides per row. Fixed dates
 * only (no clock), so every expected value in a table is a literal.
 */
import type {
  GitObservation,
  LaunchErrorObservation,
  PendingRequestObservation,
  PullRequestObservation,
  SessionObservation,
  SummaryInputs,
  TurnObservation,
} from '../../src/summary/inputs.ts'
import type { ActiveError, SummaryPayload } from '../../src/summary/types.ts'

/** 2026-01-01T00:00:00Z plus `minutes`: an ordered, readable timeline. */
export const at = (minutes: number): Date => new Date(Date.UTC(2026, 0, 1, 0, minutes))
export const iso = (minutes: number): string => at(minutes).toISOString()

export const T0 = at(0)

export function turn(id: string, minutes: number, overrides: Partial<TurnObservation> = {}): TurnObservation {
  return {
    id,
    startedAt: at(minutes),
    lifecycleOnly: false,
    promptDispatchPending: false,
    promptDispatchAttempted: false,
    hasMessages: true,
    queued: false,
    ...overrides,
  }
}

/** An empty, unattempted dispatch reservation: not authoritative. */
export const reservation = (id: string, minutes: number, overrides: Partial<TurnObservation> = {}): TurnObservation =>
  turn(id, minutes, { promptDispatchPending: true, promptDispatchAttempted: false, hasMessages: false, ...overrides })

/** A prompt accepted behind an open turn, not dispatched yet (its user message is stored). */
export const queuedPrompt = (id: string, minutes: number): TurnObservation =>
  turn(id, minutes, { promptDispatchPending: true, promptDispatchAttempted: false, hasMessages: true, queued: true })

export function permission(turnId: string | null, overrides: Partial<PendingRequestObservation> = {}): PendingRequestObservation {
  return { kind: 'PERMISSION_REQUEST', status: 'PENDING', turnId, createdAt: T0, ...overrides }
}

export function clarification(
  turnId: string | null,
  overrides: Partial<PendingRequestObservation> = {},
): PendingRequestObservation {
  return { kind: 'CLARIFICATION', status: 'PENDING', turnId, createdAt: T0, ...overrides }
}

export function sessionError(
  stamp: string,
  minutes: number,
  overrides: Partial<NonNullable<SessionObservation['error']>> = {},
): NonNullable<SessionObservation['error']> {
  return { code: 'AGENT_CRASHED', message: `error ${stamp}`, stamp, occurredAt: at(minutes), ...overrides }
}

export function session(overrides: Partial<SessionObservation> = {}): SessionObservation {
  return {
    id: 's1',
    state: 'IDLE',
    isPrimary: false,
    createdAt: T0,
    activeSubagentCount: 0,
    backgroundWork: false,
    error: null,
    errorClearedStamp: null,
    interruption: null,
    recentTurns: [],
    queuedPrompts: 0,
    pendingRequests: [],
    ...overrides,
  }
}

export function launchError(overrides: Partial<LaunchErrorObservation> = {}): LaunchErrorObservation {
  return {
    taskRepositoryId: 'repo-1',
    stamp: 'launch-1',
    category: 'LAUNCH_FAILED',
    message: 'could not create the worktree',
    recoveryActions: '["RETRY_DEFAULT"]',
    occurredAt: at(5),
    cleared: false,
    ...overrides,
  }
}

export function git(overrides: Partial<GitObservation> = {}): GitObservation {
  return {
    sessionId: 's1',
    taskRepositoryId: 'repo-1',
    additions: 0,
    deletions: 0,
    changedFiles: 0,
    ahead: 0,
    behind: 0,
    comparisonUnavailable: false,
    observedAt: at(1),
    ...overrides,
  }
}

export function pr(overrides: Partial<PullRequestObservation> = {}): PullRequestObservation {
  const repository = overrides.repository ?? 'acme/app'
  const number = overrides.number ?? 1
  return {
    repository,
    number,
    url: `https://github.com/${repository}/pull/${number}`,
    state: 'OPEN',
    draft: false,
    checks: 'NONE',
    reviewDecision: null,
    mergeableState: null,
    autoFix: false,
    autoMerge: false,
    ...overrides,
  }
}

export function inputs(overrides: Partial<SummaryInputs> = {}): SummaryInputs {
  return {
    task: { id: 'task-1', workspaceId: 'ws-1', createdAt: T0, updatedAt: T0, lastActivityAt: T0 },
    sessions: [],
    launchError: null,
    git: [],
    pullRequests: [],
    activity: { lastUserPromptAt: null, lastConversationalTurnAt: null },
    previousLastActivityAt: null,
    ...overrides,
  }
}

export function activeErrorPayload(overrides: Partial<ActiveError> = {}): ActiveError {
  return {
    sessionId: 's1',
    taskRepositoryId: null,
    stamp: 'e1',
    occurredAt: iso(3),
    preview: 'boom',
    category: 'AGENT_CRASHED',
    recoveryActions: ['RETRY_DEFAULT'],
    ...overrides,
  }
}

/** A fully populated, valid payload: every field set, so a change anywhere is observable. */
export function payload(overrides: Partial<SummaryPayload> = {}): SummaryPayload {
  return {
    lastActivityAt: iso(10),
    primarySession: { id: 's1', state: 'RUNNING' },
    foregroundActivity: 'GENERATING',
    activeSubagentCount: 2,
    pendingAction: 'PERMISSION',
    activeError: activeErrorPayload(),
    git: { additions: 10, deletions: 3, changedFiles: 2, ahead: 1, behind: 0, comparisonUnavailable: false },
    pullRequest: {
      count: 2,
      openCount: 1,
      aggregateState: 'PASSING',
      representative: { repository: 'acme/app', number: 7, url: 'https://github.com/acme/app/pull/7' },
      autoFixEnabled: true,
      autoMergeEnabled: false,
    },
    waitingSince: iso(8),
    queuedPromptCount: 1,
    interruption: { sessionId: 's1', reason: 'SERVER_RESTART', at: iso(9) },
    ...overrides,
  }
}

/** The same bytes as `ascii` repeated: readable lengths in byte-bound tables. */
export const ascii = (bytes: number): string => 'a'.repeat(bytes)
export const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8')
/** True when the string has no lone surrogate (a cut inside a surrogate pair would leave one). */
export const isWellFormed = (text: string): boolean => !/\p{Cs}/u.test(text)
