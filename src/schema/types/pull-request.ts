import { builder } from '../builder.ts'
import { requireReadableTask } from '../authorize.ts'
import { badInput, echoed, notFound } from '../../errors.ts'
import { findPullRequest, recordPullRequest } from '../../store/pull-requests.ts'
import type { PullRequestRow } from '../../store/rows.ts'
import { TaskRef } from './task.ts'

const PullRequestStateEnum = builder.enumType('PullRequestState', { values: ['OPEN', 'CLOSED', 'MERGED'] as const })
const PullRequestChecksEnum = builder.enumType('PullRequestChecks', {
  values: ['NONE', 'PENDING', 'SUCCESS', 'FAILURE'] as const,
})
const PullRequestReviewDecisionEnum = builder.enumType('PullRequestReviewDecision', {
  values: ['REVIEW_REQUIRED', 'APPROVED', 'CHANGES_REQUESTED'] as const,
})

export const PullRequestRef = builder.objectRef<PullRequestRow>('PullRequest').implement({
  fields: (t) => ({
    id: t.id({
      description:
        'Stable per workspace, repository and number: each workspace keeps its own observation (with its own autoFix/autoMerge).',
      // Neither a UUID nor a GitHub repository name contains ':' or '#', so the parts cannot run together.
      resolve: (p) => `${p.workspaceId}:${p.repository}#${p.number}`,
    }),
    repository: t.exposeString('repository'),
    number: t.exposeInt('number'),
    url: t.exposeString('url'),
    title: t.exposeString('title'),
    headBranch: t.exposeString('headBranch'),
    state: t.field({ type: PullRequestStateEnum, resolve: (p) => p.state as (typeof PullRequestStateEnum)['$inferType'] }),
    draft: t.exposeBoolean('draft'),
    checks: t.field({
      type: PullRequestChecksEnum,
      resolve: (p) => p.checks as (typeof PullRequestChecksEnum)['$inferType'],
    }),
    reviewDecision: t.field({
      type: PullRequestReviewDecisionEnum,
      nullable: true,
      resolve: (p) => p.reviewDecision as (typeof PullRequestReviewDecisionEnum)['$inferType'] | null,
    }),
    mergeableState: t.exposeString('mergeableState', { nullable: true }),
    autoFix: t.exposeBoolean('autoFix'),
    autoMerge: t.exposeBoolean('autoMerge'),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
})

builder.objectField(TaskRef, 'pullRequests', (t) =>
  t.field({
    type: [PullRequestRef],
    description: 'Full pull-request details, owned by the GitHub integration; loaded only by surfaces that ask.',
    resolve: (task, _args, ctx) => ctx.loaders.pullRequestsOfTask.load(task.id),
  }),
)

const PullRequestAutomationInput = builder.inputType('PullRequestAutomationInput', {
  fields: (t) => ({
    taskId: t.id({ required: true }),
    repository: t.string({ required: true }),
    number: t.int({ required: true }),
    autoFix: t.boolean(),
    autoMerge: t.boolean(),
  }),
})

builder.mutationField('setPullRequestAutomation', (t) =>
  t.field({
    type: PullRequestRef,
    args: { input: t.arg({ type: PullRequestAutomationInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      if (input.autoFix == null && input.autoMerge == null) throw badInput('Give autoFix, autoMerge or both.', 'input')
      const task = await requireReadableTask(ctx, input.taskId)
      const missing = () => notFound('Pull request of this task', `${echoed(input.repository)}#${input.number}`)
      const pr = await findPullRequest(ctx.store, task.workspaceId, input.repository, input.number)
      if (!pr || pr.taskId !== input.taskId) throw missing()
      const updated = await recordPullRequest(ctx.store, {
        ...pr,
        state: pr.state as 'OPEN' | 'CLOSED' | 'MERGED',
        checks: pr.checks as 'NONE' | 'PENDING' | 'SUCCESS' | 'FAILURE',
        reviewDecision: pr.reviewDecision as 'REVIEW_REQUIRED' | 'APPROVED' | 'CHANGES_REQUESTED' | null,
        autoFix: input.autoFix ?? pr.autoFix,
        autoMerge: input.autoMerge ?? pr.autoMerge,
        updatedAt: ctx.store.now(),
      })
      if (!updated) throw missing() // the repository was unlinked meanwhile
      return updated
    },
  }),
)
