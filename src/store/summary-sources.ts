// Batched reads of everything a task summary is derived from. A fixed number of statements
// whatever the number of tasks, sessions or history rows: the summary read paths must not N+1.
import { Prisma } from '../generated/sqlite/client.ts'
import type { Store } from './store.ts'
import { groupBy } from '../util/group-by.ts'
import { rawBool, rawDate, rawInt } from './raw-values.ts'
import type {
  GitObservation,
  PendingRequestObservation,
  PendingSessionObservation,
  SessionObservation,
  SummaryInputs,
  TurnObservation,
} from '../summary/inputs.ts'
import { INTERRUPTION_REASONS, type InterruptionReason, type SessionState } from '../summary/types.ts'
import { decidesAlone } from '../summary/pending.ts'
import { pendingSourceRows, sessionSourceRows, taskSourceRows } from './summary-source-rows.ts'

/** How many of a session's newest turns the pending boundary looks at. */
const RECENT_TURNS = 3

type TurnRow = {
  id: string
  sessionId: string
  startedAt: string | Date
  lifecycleOnly: unknown
  promptDispatchPending: unknown
  promptDispatchAttempted: unknown
  hasMessages: unknown
  queued: unknown
  queuedPrompts: unknown
}

/** A prompt accepted behind an open turn and not dispatched yet (as QUEUED_PROMPT in store/turns.ts, cut-off ones too). */
const QUEUED_SQL = (alias: string) => Prisma.raw(`(${alias}."queuedAt" IS NOT NULL AND NOT ${alias}."promptDispatchAttempted")`)


const INTERRUPTIONS = new Set<string>(INTERRUPTION_REASONS)

interface SessionTurns {
  recent: TurnObservation[]
  /** Prompts accepted behind an open turn and not dispatched yet, over all the session's turns. */
  queuedPrompts: number
}

/**
 * The newest few turns of each session, and its count of queued prompts, in one window-function
 * query (portable SQLite / PostgreSQL): the count is a window sum over the same partition, so it
 * costs no statement of its own. `of`: the ids are sessions', or tasks' (every session of each
 * task, read by the Turn's own taskId index). Queued prompts rank after every other turn: however many wait,
 * the turn they wait behind stays in the window; and the newest of them is always read too (it
 * supersedes an older clarification, summary/pending.ts).
 */
async function recentTurns({ db }: Store, ids: readonly string[], of: 'sessionId' | 'taskId' = 'sessionId'): Promise<Map<string, SessionTurns>> {
  const result = new Map<string, SessionTurns>()
  if (ids.length === 0) return result
  const idList = Prisma.join([...ids])
  // The message probe is in the outer query: it runs for the few newest turns of each session
  // only, not for every turn the window ranks (their number grows with history).
  const rows = await db.$queryRaw<TurnRow[]>`
    SELECT t."id", t."sessionId", t."startedAt", t."lifecycleOnly", t."promptDispatchPending", t."promptDispatchAttempted",
      EXISTS (SELECT 1 FROM "Message" m WHERE m."turnId" = t."id") AS "hasMessages",
      t."queued", t."queuedPrompts"
    FROM (
      SELECT turn."id", turn."sessionId", turn."startedAt", turn."lifecycleOnly", turn."promptDispatchPending",
        turn."promptDispatchAttempted", CASE WHEN ${QUEUED_SQL('turn')} THEN 1 ELSE 0 END AS "queued",
        SUM(CASE WHEN turn."queuedAt" IS NOT NULL AND turn."completedAt" IS NULL THEN 1 ELSE 0 END) OVER (PARTITION BY turn."sessionId") AS "queuedPrompts",
        ROW_NUMBER() OVER (PARTITION BY turn."sessionId" ORDER BY CASE WHEN ${QUEUED_SQL('turn')} THEN 1 ELSE 0 END, turn."startedAt" DESC, turn."id" DESC) AS "rank",
        ROW_NUMBER() OVER (PARTITION BY turn."sessionId", CASE WHEN ${QUEUED_SQL('turn')} THEN 1 ELSE 0 END ORDER BY turn."startedAt" DESC, turn."id" DESC) AS "kindRank"
      FROM "Turn" turn
      WHERE ${Prisma.raw(`turn."${of}"`)} IN (${idList})
    ) t
    WHERE t."rank" <= ${RECENT_TURNS} OR (t."queued" = 1 AND t."kindRank" = 1)`
  for (const row of rows) {
    const entry = result.get(row.sessionId) ?? { recent: [], queuedPrompts: rawInt(row.queuedPrompts as number | bigint) }
    entry.recent.push({
      id: row.id,
      startedAt: rawDate(row.startedAt),
      lifecycleOnly: rawBool(row.lifecycleOnly),
      promptDispatchPending: rawBool(row.promptDispatchPending),
      promptDispatchAttempted: rawBool(row.promptDispatchAttempted),
      hasMessages: rawBool(row.hasMessages),
      queued: rawBool(row.queued),
    })
    result.set(row.sessionId, entry)
  }
  return result
}

type OpenRequestRow = {
  taskId: string
  sessionId: string
  kind: string
  turnId: string | null
  createdAt: string | Date
  sessionState: string
  /** The session's newest turn (null: it has none). */
  newestId: string | null
  newestStartedAt: string | Date | null
  newestLifecycleOnly: unknown
  newestPromptDispatchPending: unknown
  newestPromptDispatchAttempted: unknown
  newestHasMessages: unknown
  /** The session's newest queued prompt (null: none waits). */
  queuedId: string | null
  queuedStartedAt: string | Date | null
  queuedPromptDispatchPending: unknown
  queuedHasMessages: unknown
}

function newestQueued(row: OpenRequestRow): TurnObservation[] {
  if (row.queuedId === null || row.queuedStartedAt === null) return []
  return [
    {
      id: row.queuedId,
      startedAt: rawDate(row.queuedStartedAt),
      lifecycleOnly: false,
      promptDispatchPending: rawBool(row.queuedPromptDispatchPending),
      promptDispatchAttempted: false,
      hasMessages: rawBool(row.queuedHasMessages),
      queued: true,
    },
  ]
}

function newestTurn(row: OpenRequestRow): TurnObservation | undefined {
  if (row.newestId === null || row.newestStartedAt === null) return undefined
  return {
    id: row.newestId,
    startedAt: rawDate(row.newestStartedAt),
    lifecycleOnly: rawBool(row.newestLifecycleOnly),
    promptDispatchPending: rawBool(row.newestPromptDispatchPending),
    promptDispatchAttempted: rawBool(row.newestPromptDispatchAttempted),
    hasMessages: rawBool(row.newestHasMessages),
    // The statement reads the newest turn that is not a queued prompt.
    queued: false,
  }
}

/**
 * The bounded projection boot and list reads reconcile `pendingAction` from: each task's
 * unresolved permission and clarification rows (an index range per task that holds only open
 * rows) with the state of their session, its newest turn that is not a queued prompt and its
 * newest queued prompt (summary/pending.ts: a queued prompt supersedes an older clarification,
 * never a permission), which decide whether the request still counts. Usually that turn decides alone (summary/pending.ts `decidesAlone`): one statement
 * whatever the history. Sessions whose newest turn does not (an agent relaunch, an empty
 * reservation) have their window of newest turns read in a second. Sessions without an open
 * request cannot be pending and are not read; callers ask only for tasks that have an open
 * request (SummaryReadRow.openRequests) or claim a pending action.
 */
export async function loadPendingInputs(store: Store, taskIds: readonly string[]): Promise<Map<string, PendingSessionObservation[]>> {
  const { db } = store
  const result = new Map<string, PendingSessionObservation[]>()
  if (taskIds.length === 0) return result
  // Raw: a 500-id list costs Prisma's query builder more than the indexed read itself.
  const open = await db.$queryRaw<OpenRequestRow[]>`
    SELECT m."taskId", m."sessionId", m."kind", m."turnId", m."createdAt", s."state" AS "sessionState", n."id" AS "newestId", n."startedAt" AS "newestStartedAt", n."lifecycleOnly" AS "newestLifecycleOnly",
      n."promptDispatchPending" AS "newestPromptDispatchPending", n."promptDispatchAttempted" AS "newestPromptDispatchAttempted",
      EXISTS (SELECT 1 FROM "Message" nm WHERE nm."turnId" = n."id") AS "newestHasMessages",
      q."id" AS "queuedId", q."startedAt" AS "queuedStartedAt", q."promptDispatchPending" AS "queuedPromptDispatchPending", EXISTS (SELECT 1 FROM "Message" qm WHERE qm."turnId" = q."id") AS "queuedHasMessages"
    FROM "Message" m
      JOIN "Session" s ON s."id" = m."sessionId"
      LEFT JOIN "Turn" n ON n."id" = (
        SELECT x."id" FROM "Turn" x WHERE x."sessionId" = m."sessionId" AND NOT ${QUEUED_SQL('x')} ORDER BY x."startedAt" DESC, x."id" DESC LIMIT 1)
      LEFT JOIN "Turn" q ON q."id" = (
        SELECT x."id" FROM "Turn" x WHERE x."sessionId" = m."sessionId" AND ${QUEUED_SQL('x')} ORDER BY x."startedAt" DESC, x."id" DESC LIMIT 1)
    WHERE m."taskId" IN (${Prisma.join([...taskIds])}) AND m."status" = 'PENDING'
      AND m."kind" IN ('PERMISSION_REQUEST', 'CLARIFICATION') AND m."pendingId" IS NOT NULL`
  const bySession = groupBy(open, (m) => m.sessionId)
  const undecided = [...bySession].filter(([, [first]]) => {
    const newest = newestTurn(first!)
    return !newest || !decidesAlone(newest)
  })
  const windows = undecided.length > 0 ? await recentTurns(store, undecided.map(([id]) => id)) : new Map<string, SessionTurns>()
  for (const [sessionId, requests] of bySession) {
    const s = requests[0]!
    const newest = newestTurn(s)
    const list = result.get(s.taskId) ?? []
    list.push({
      state: s.sessionState as SessionState,
      // The newest queued prompt goes with it: it supersedes an older clarification, never a permission.
      recentTurns: newest && decidesAlone(newest) ? [newest, ...newestQueued(s)] : (windows.get(sessionId)?.recent ?? []),
      // Every row read is PENDING (the statement asks for no other).
      pendingRequests: requests.map((r) => pendingObservation({ ...r, status: 'PENDING' })),
    })
    result.set(s.taskId, list)
  }
  return result
}

function pendingObservation(m: { kind: string; status: string | null; turnId: string | null; createdAt: string | number | Date }): PendingRequestObservation {
  return { kind: m.kind as PendingRequestObservation['kind'], status: m.status, turnId: m.turnId, createdAt: rawDate(m.createdAt) }
}

/**
 * Loads the summary inputs of the given tasks. Tasks that do not exist are absent from the
 * result. `previous` supplies each stored summary's lastActivityAt (monotonic maximum).
 */
export async function loadSummaryInputs(
  store: Store,
  taskIds: readonly string[],
  previousLastActivity: Map<string, Date | null> = new Map(),
): Promise<Map<string, SummaryInputs>> {
  const ids = [...new Set(taskIds)]
  if (ids.length === 0) return new Map()
  const { db } = store
  // Four raw statements, independent of one another (summary-source-rows.ts); turns by task id,
  // so they need not wait for the sessions. Only tasks that have launch errors, pull requests or
  // Git observations (the task row says) read those rows, through the model as before.
  const [tasks, sessions, pending, turns] = await Promise.all([
    taskSourceRows(store, ids),
    sessionSourceRows(store, ids),
    pendingSourceRows(store, ids),
    recentTurns(store, ids, 'taskId'),
  ])
  const having = (flag: 'hasLaunchError' | 'hasPullRequests' | 'hasGit') => tasks.filter((t) => t[flag]).map((t) => t.id)
  const [launchIds, prIds, gitIds] = [having('hasLaunchError'), having('hasPullRequests'), having('hasGit')]
  const none = Promise.resolve([])
  const [launchErrors, pullRequests, git] = await Promise.all([
    launchIds.length ? db.taskLaunchError.findMany({ where: { taskId: { in: launchIds } } }) : none,
    prIds.length ? db.pullRequestObservation.findMany({ where: { taskId: { in: prIds } } }) : none,
    gitIds.length ? db.gitObservation.findMany({ where: { taskId: { in: gitIds } } }) : none,
  ])
  const sessionsByTask = groupBy(sessions, (s) => s.taskId)
  const pendingBySession = groupBy(pending, (m) => m.sessionId)
  const gitByTask = groupBy(git, (g) => g.taskId)
  const prsByTask = groupBy(pullRequests, (p) => p.taskId)
  const launchByTask = new Map(launchErrors.map((l) => [l.taskId, l]))
  const later = (a: Date | null | undefined, b: Date | null | undefined) =>
    (a && b ? (a > b ? a : b) : (a ?? b)) ?? null

  const result = new Map<string, SummaryInputs>()
  for (const task of tasks) {
    const sessionObservations: SessionObservation[] = (sessionsByTask.get(task.id) ?? []).map((s) => ({
      id: s.id,
      state: s.state as SessionState,
      isPrimary: s.isPrimary,
      createdAt: s.createdAt,
      activeSubagentCount: s.activeSubagentCount,
      backgroundWork: s.backgroundWork,
      error:
        s.errorStamp && s.errorCode && s.errorOccurredAt
          ? { code: s.errorCode, message: s.errorMessage ?? '', stamp: s.errorStamp, occurredAt: s.errorOccurredAt }
          : null,
      errorClearedStamp: s.errorClearedStamp,
      // An unknown stored reason is ignored, never a reason to reject the summary.
      interruption:
        s.interruption !== null && s.interruptedAt !== null && INTERRUPTIONS.has(s.interruption)
          ? { reason: s.interruption as InterruptionReason, at: s.interruptedAt }
          : null,
      recentTurns: turns.get(s.id)?.recent ?? [],
      queuedPrompts: turns.get(s.id)?.queuedPrompts ?? 0,
      pendingRequests: (pendingBySession.get(s.id) ?? []).map(pendingObservation),
    }))
    const launch = launchByTask.get(task.id)
    result.set(task.id, {
      task: {
        id: task.id,
        workspaceId: task.workspaceId,
        createdAt: task.createdAt,
        updatedAt: task.updatedAt,
        lastActivityAt: task.lastActivityAt,
      },
      sessions: sessionObservations,
      launchError: launch
        ? {
            taskRepositoryId: launch.taskRepositoryId,
            stamp: launch.stamp,
            category: launch.category,
            message: launch.message,
            recoveryActions: launch.recoveryActions,
            occurredAt: launch.occurredAt,
            cleared: launch.clearedAt !== null,
          }
        : null,
      git: (gitByTask.get(task.id) ?? []).map(
        (g): GitObservation => ({
          sessionId: g.sessionId,
          taskRepositoryId: g.taskRepositoryId,
          additions: g.additions,
          deletions: g.deletions,
          changedFiles: g.changedFiles,
          ahead: g.ahead,
          behind: g.behind,
          comparisonUnavailable: g.comparisonUnavailable,
          observedAt: g.observedAt,
        }),
      ),
      pullRequests: prsByTask.get(task.id) ?? [],
      activity: {
        lastUserPromptAt: task.lastUserPromptAt,
        lastConversationalTurnAt: later(task.lastTurnStartedAt, task.lastTurnCompletedAt),
      },
      previousLastActivityAt: previousLastActivity.get(task.id) ?? null,
    })
  }
  return result
}
