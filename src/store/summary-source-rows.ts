// The raw statements loadSummaryInputs reads a task's sources with (summary-sources.ts). Every
// projection runs them, so each summary change pays for them: through Prisma's query builder one
// statement cost about 1 ms of CPU, a raw one about a third of that (bench P14), and the task row,
// its activity times and whether it has launch errors, pull requests or Git observations come in
// one statement instead of seven. Values are mapped as the model queries mapped them.
import { Prisma } from '../generated/sqlite/client.ts'
import type { Store } from './store.ts'
import { rawBool, rawDate, rawInt } from './raw-values.ts'

type RawDate = string | number | Date

type TaskRow = {
  id: string
  workspaceId: string
  createdAt: RawDate
  updatedAt: RawDate
  lastActivityAt: RawDate
  lastUserPromptAt: RawDate | null
  lastTurnStartedAt: RawDate | null
  lastTurnCompletedAt: RawDate | null
  hasLaunchError: unknown
  hasPullRequests: unknown
  hasGit: unknown
}

export interface TaskSourceRow {
  id: string
  workspaceId: string
  createdAt: Date
  updatedAt: Date
  lastActivityAt: Date
  /** The newest prompt a user wrote in the task (MAX over its USER messages). */
  lastUserPromptAt: Date | null
  /** The newest start of a conversational turn: not lifecycle-only, and its prompt dispatched or never waiting for dispatch. */
  lastTurnStartedAt: Date | null
  /** The newest completion of a conversational turn not cut off (one cut off live already moved the task's own activity time, one closed by recovery is no milestone). */
  lastTurnCompletedAt: Date | null
  /** Whether the task has rows of these sources at all: the common task has none, and then they cost no statement. */
  hasLaunchError: boolean
  hasPullRequests: boolean
  hasGit: boolean
}

const optionalDate = (v: RawDate | null) => (v === null ? null : rawDate(v))

/**
 * The tasks, each with its activity times (the newest user prompt, turn start and turn completion,
 * each an indexed MAX per task) and whether it has launch errors, pull requests or Git observations.
 */
export async function taskSourceRows({ db }: Store, ids: readonly string[]): Promise<TaskSourceRow[]> {
  const rows = await db.$queryRaw<TaskRow[]>`
    SELECT t."id", t."workspaceId", t."createdAt", t."updatedAt", t."lastActivityAt",
      (SELECT MAX(m."createdAt") FROM "Message" m WHERE m."taskId" = t."id" AND m."author" = 'USER') AS "lastUserPromptAt",
      (SELECT MAX(x."startedAt") FROM "Turn" x WHERE x."taskId" = t."id" AND NOT x."lifecycleOnly"
        AND (NOT x."promptDispatchPending" OR x."promptDispatchAttempted")) AS "lastTurnStartedAt",
      (SELECT MAX(x."completedAt") FROM "Turn" x WHERE x."taskId" = t."id" AND NOT x."lifecycleOnly"
        AND NOT x."interrupted" AND x."completedAt" IS NOT NULL) AS "lastTurnCompletedAt",
      EXISTS (SELECT 1 FROM "TaskLaunchError" l WHERE l."taskId" = t."id") AS "hasLaunchError",
      EXISTS (SELECT 1 FROM "PullRequestObservation" p WHERE p."taskId" = t."id") AS "hasPullRequests",
      EXISTS (SELECT 1 FROM "GitObservation" g WHERE g."taskId" = t."id") AS "hasGit"
    FROM "Task" t WHERE t."id" IN (${Prisma.join([...ids])})`
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspaceId,
    createdAt: rawDate(r.createdAt),
    updatedAt: rawDate(r.updatedAt),
    lastActivityAt: rawDate(r.lastActivityAt),
    lastUserPromptAt: optionalDate(r.lastUserPromptAt),
    lastTurnStartedAt: optionalDate(r.lastTurnStartedAt),
    lastTurnCompletedAt: optionalDate(r.lastTurnCompletedAt),
    hasLaunchError: rawBool(r.hasLaunchError),
    hasPullRequests: rawBool(r.hasPullRequests),
    hasGit: rawBool(r.hasGit),
  }))
}

type SessionRow = {
  id: string
  taskId: string
  state: string
  isPrimary: unknown
  createdAt: RawDate
  activeSubagentCount: number | bigint
  backgroundWork: unknown
  errorCode: string | null
  errorMessage: string | null
  errorStamp: string | null
  errorOccurredAt: RawDate | null
  errorClearedStamp: string | null
  interruption: string | null
  interruptedAt: RawDate | null
}

export interface SessionSourceRow {
  id: string
  taskId: string
  state: string
  isPrimary: boolean
  createdAt: Date
  activeSubagentCount: number
  backgroundWork: boolean
  errorCode: string | null
  errorMessage: string | null
  errorStamp: string | null
  errorOccurredAt: Date | null
  errorClearedStamp: string | null
  interruption: string | null
  interruptedAt: Date | null
}

/** The tasks' sessions, the columns a summary reads. */
export async function sessionSourceRows({ db }: Store, taskIds: readonly string[]): Promise<SessionSourceRow[]> {
  const rows = await db.$queryRaw<SessionRow[]>`
    SELECT s."id", s."taskId", s."state", s."isPrimary", s."createdAt", s."activeSubagentCount", s."backgroundWork", s."errorCode",
      s."errorMessage", s."errorStamp", s."errorOccurredAt", s."errorClearedStamp", s."interruption", s."interruptedAt"
    FROM "Session" s WHERE s."taskId" IN (${Prisma.join([...taskIds])})`
  return rows.map((r) => ({
    ...r,
    isPrimary: rawBool(r.isPrimary),
    createdAt: rawDate(r.createdAt),
    activeSubagentCount: rawInt(r.activeSubagentCount),
    backgroundWork: rawBool(r.backgroundWork),
    errorOccurredAt: optionalDate(r.errorOccurredAt),
    interruptedAt: optionalDate(r.interruptedAt),
  }))
}

export interface PendingSourceRow {
  sessionId: string
  kind: string
  status: string | null
  turnId: string | null
  createdAt: RawDate
}

/** The tasks' open permission and clarification requests (an index range per task on taskId, status, kind). */
export function pendingSourceRows({ db }: Store, taskIds: readonly string[]): Promise<PendingSourceRow[]> {
  return db.$queryRaw<PendingSourceRow[]>`
    SELECT m."sessionId", m."kind", m."status", m."turnId", m."createdAt" FROM "Message" m
    WHERE m."taskId" IN (${Prisma.join([...taskIds])}) AND m."kind" IN ('PERMISSION_REQUEST', 'CLARIFICATION')
      AND m."status" = 'PENDING' AND m."pendingId" IS NOT NULL`
}
