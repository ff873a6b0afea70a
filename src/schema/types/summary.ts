import { builder } from '../builder.ts'
import { requirePrincipal } from '../authorize.ts'
import { badInput } from '../../errors.ts'
import {
  INTERRUPTION_REASONS,
  PULL_REQUEST_AGGREGATE_STATES,
  RECOVERY_ACTIONS,
  type GitTotals,
  type PullRequestSummary,
} from '../../summary/types.ts'
import type { ActiveErrorView, InterruptionView, SummaryView } from '../../summary/view.ts'
import { SessionStateEnum } from './session.ts'
import { TaskRef } from './task.ts'

const MAX_SUMMARY_IDS = 1000

const ForegroundActivityEnum = builder.enumType('ForegroundActivity', { values: ['GENERATING', 'BACKGROUND'] as const })
const PendingActionEnum = builder.enumType('PendingAction', { values: ['PERMISSION', 'CLARIFICATION'] as const })
const RecoveryActionEnum = builder.enumType('RecoveryAction', { values: RECOVERY_ACTIONS })
const PullRequestAggregateStateEnum = builder.enumType('PullRequestAggregateState', {
  values: PULL_REQUEST_AGGREGATE_STATES,
})

const InterruptionReasonEnum = builder.enumType('InterruptionReason', {
  description: "(v1.3) Why a session's latest turn was cut off by the server rather than by the agent or the user.",
  values: {
    SERVER_RESTART: { description: 'The server process that ran the agent stopped or died.' },
    OWNER_LOST: {
      description: 'The instance that owned the session lost it (its lease expired) and another instance took over.',
    },
  } satisfies Record<(typeof INTERRUPTION_REASONS)[number], unknown>,
})

const InterruptionRef = builder.objectRef<InterruptionView>('Interruption').implement({
  description:
    "(v1.3) The primary session's latest turn was cut off by the server; cleared by the next user prompt, resumeSession, or deleteSession.",
  fields: (t) => ({
    sessionId: t.exposeID('sessionId'),
    reason: t.expose('reason', { type: InterruptionReasonEnum }),
    at: t.expose('at', { type: 'DateTime', description: 'When the server cut the turn off.' }),
  }),
})

const PrimarySessionSummaryRef = builder
  .objectRef<{ id: string; state: (typeof SessionStateEnum)['$inferType'] }>('PrimarySessionSummary')
  .implement({
    fields: (t) => ({
      id: t.exposeID('id'),
      state: t.expose('state', { type: SessionStateEnum }),
    }),
  })

const ActiveErrorRef = builder.objectRef<ActiveErrorView>('ActiveError').implement({
  fields: (t) => ({
    sessionId: t.exposeID('sessionId', { nullable: true, description: 'Null for a task-owned (pre-session launch) error.' }),
    taskRepositoryId: t.exposeID('taskRepositoryId', { nullable: true }),
    stamp: t.exposeString('stamp'),
    occurredAt: t.expose('occurredAt', { type: 'DateTime' }),
    preview: t.exposeString('preview', { description: 'At most 512 UTF-8 bytes.' }),
    category: t.exposeString('category', { nullable: true, description: 'At most 64 UTF-8 bytes.' }),
    recoveryActions: t.expose('recoveryActions', {
      type: [RecoveryActionEnum],
      description: 'Known values only, de-duplicated, order kept, at most three.',
    }),
  }),
})

const GitTotalsRef = builder.objectRef<GitTotals>('GitTotals').implement({
  description: 'Aggregate of the latest observation of every repository of the task: numeric totals only.',
  fields: (t) => ({
    additions: t.exposeInt('additions'),
    deletions: t.exposeInt('deletions'),
    changedFiles: t.exposeInt('changedFiles'),
    ahead: t.exposeInt('ahead'),
    behind: t.exposeInt('behind'),
    comparisonUnavailable: t.exposeBoolean('comparisonUnavailable', {
      description:
        'True when some repository could not be compared (missing base, monitor failure); totals then keep the last good observation.',
    }),
  }),
})

const PullRequestRefRef = builder
  .objectRef<NonNullable<PullRequestSummary['representative']>>('PullRequestRef')
  .implement({
    fields: (t) => ({
      repository: t.exposeString('repository'),
      number: t.exposeInt('number'),
      url: t.exposeString('url'),
    }),
  })

const PullRequestSummaryRef = builder.objectRef<PullRequestSummary>('PullRequestSummary').implement({
  fields: (t) => ({
    count: t.exposeInt('count'),
    openCount: t.exposeInt('openCount'),
    aggregateState: t.expose('aggregateState', {
      type: PullRequestAggregateStateEnum,
      description: 'The most attention-worthy state; open pull requests before terminal ones.',
    }),
    representative: t.expose('representative', { type: PullRequestRefRef, nullable: true }),
    autoFixEnabled: t.exposeBoolean('autoFixEnabled', {
      description: 'True when any active (open) linked pull request has auto-fix enabled.',
    }),
    autoMergeEnabled: t.exposeBoolean('autoMergeEnabled', {
      description: 'True when any active (open) linked pull request has auto-merge enabled.',
    }),
  }),
})

export const TaskStatusSummaryRef = builder.objectRef<SummaryView>('TaskStatusSummary').implement({
  description:
    'The bounded status contract of one task. Its size does not grow with the number of sessions, repositories, pull requests or messages.',
  // Every field is a property of the SummaryView (src/summary/view.ts): no resolver, so a
  // compiled query reads the whole summary inline.
  fields: (t) => ({
    id: t.exposeID('id', {
      description:
        'Equals taskId: the same for every revision, so caches keyed by type name and id (Apollo InMemoryCache, urql Graphcache) replace the cached summary with each newer one.',
      // The type name tells it apart from the Task's id in such caches, and a client holding only a
      // taskId (TaskDeleted, taskStatusSummaries) can still name the cache entry.
    }),
    taskId: t.exposeID('taskId'),
    revision: t.exposeInt('revision', { description: 'Monotonic per task; advances only when the semantic payload changes.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Projection time of this revision.' }),
    lastActivityAt: t.expose('lastActivityAt', {
      type: 'DateTime',
      nullable: true,
      description:
        'Latest durable task, user-prompt or conversational-turn milestone. Never moved by focus, subscriptions, Git/PR polling, repair or streamed chunks.',
    }),
    primarySession: t.expose('primarySession', { type: PrimarySessionSummaryRef, nullable: true }),
    foregroundActivity: t.expose('foregroundActivity', { type: ForegroundActivityEnum, nullable: true, description: 'Null means idle.' }),
    activeSubagentCount: t.exposeInt('activeSubagentCount'),
    pendingAction: t.expose('pendingAction', { type: PendingActionEnum, nullable: true, description: 'Null means no pending action.' }),
    activeError: t.expose('activeError', { type: ActiveErrorRef, nullable: true }),
    git: t.expose('git', { type: GitTotalsRef, nullable: true }),
    pullRequest: t.expose('pullRequest', { type: PullRequestSummaryRef, nullable: true }),
    waitingSince: t.expose('waitingSince', {
      type: 'DateTime',
      nullable: true,
      description:
        '(v1.3) When the current pendingAction was raised; null when there is none. Lets a switcher say how long a task has waited on its user.',
    }),
    queuedPromptCount: t.exposeInt('queuedPromptCount', {
      description:
        "(v1.3) User prompts accepted by the task's sessions and not yet dispatched to their agent (a turn was in flight). Durable: it survives restarts and takeovers, and each queued prompt is dispatched exactly once (by the session's owner after the restart or takeover, in order, one turn at a time); only a session nobody can run any more (its agent profile gone, its agent unable to start) closes its queued prompts, and the count drops.",
    }),
    interruption: t.expose('interruption', {
      type: InterruptionRef,
      nullable: true,
      description: "(v1.3) Set while the primary session's latest turn is one the server cut off.",
    }),
  }),
})

builder.objectField(TaskRef, 'statusSummary', (t) =>
  t.field({
    type: TaskStatusSummaryRef,
    nullable: true,
    description: 'Bounded runtime facts for task switchers. Null only while a summary has never been derivable.',
    resolve: (task, _args, ctx) => {
      // A list that read its page's summaries (taskPage) hands them over with no promise.
      const known = ctx.loaders.knownSummaries.get(task.id)
      return known !== undefined ? known : ctx.loaders.statusSummary.load(task.id)
    },
  }),
)

builder.queryField('taskStatusSummaries', (t) =>
  t.field({
    type: [TaskStatusSummaryRef],
    nullable: { list: false, items: true },
    description: 'Latest summaries for a set of tasks (at most 1000 ids); null for an unknown or unreadable id.',
    args: { taskIds: t.arg.idList({ required: true }) },
    resolve: async (_root, { taskIds }, ctx) => {
      requirePrincipal(ctx)
      if (taskIds.length > MAX_SUMMARY_IDS)
        throw badInput(`taskStatusSummaries takes at most ${MAX_SUMMARY_IDS} ids.`, 'taskIds')
      // Unknown and unreadable ids answer null alike, so the answer reveals nothing of other workspaces.
      const tasks = await ctx.loaders.task.loadMany(taskIds)
      const readable = await Promise.all(
        tasks.map((t) => (t && !(t instanceof Error) ? ctx.loaders.isMember.load(t.workspaceId) : false)),
      )
      return Promise.all(taskIds.map((id, i) => (readable[i] ? ctx.loaders.statusSummary.load(id) : null)))
    },
  }),
)
