import { builder } from '../builder.ts'
import { requireReadableTask, requireWorkspaceMember } from '../authorize.ts'
import { boundedText, intInRange, optionalText } from '../validate.ts'
import { decodeTaskCursor, encodeTaskCursor } from '../cursor.ts'
import { badInput, notFound } from '../../errors.ts'
import { createTask, deleteTask, listTasks, StepNotInWorkspace, updateTask } from '../../store/tasks.ts'
import type { NewTaskRepository, TaskOrder } from '../../store/tasks.ts'
import type { TaskRepositoryRow, TaskRow } from '../../store/rows.ts'
import { checkLocalPath } from '../../git/repository-roots.ts'
import type { Context } from '../context.ts'
import { selectsPath } from '../lookahead.ts'
import type { SummaryReadRow } from '../../store/summaries.ts'
import type { StoredSummary } from '../../summary/types.ts'
import { summaryView } from '../../summary/view.ts'
import type { GraphQLResolveInfo } from 'graphql'

export const MAX_TASKS_PAGE = 500
const MAX_TITLE = 500
const MAX_DESCRIPTION = 20_000
const MAX_REPOSITORIES = 50

export const TaskRef = builder.objectRef<TaskRow>('Task')

export const TaskRepositoryRef = builder.objectRef<TaskRepositoryRow>('TaskRepository').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', {
      description: 'For a GitHub repository its full name, owner/name: pull requests link to it by this name and their head branch.',
    }),
    localPath: t.exposeString('localPath', {
      nullable: true,
      description: 'Working tree the Git monitor observes (may be null for a repository with no local checkout).',
    }),
    baseBranch: t.exposeString('baseBranch', { nullable: true }),
    branch: t.exposeString('branch', { nullable: true }),
  }),
})

TaskRef.implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    workspaceId: t.exposeID('workspaceId'),
    title: t.exposeString('title'),
    description: t.exposeString('description', { nullable: true }),
    workflowStepId: t.exposeID('workflowStepId'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    repositories: t.field({
      type: [TaskRepositoryRef],
      resolve: (task, _args, ctx) => ctx.loaders.repositoriesOfTask.load(task.id),
    }),
  }),
})

export interface TaskPage {
  /** Under the names TaskEdge serves, so its fields need no resolver (see SummaryView). */
  edges: { node: TaskRow; cursor: string }[]
  hasNextPage: boolean
}

export const TaskOrderEnum = builder.enumType('TaskOrder', {
  description: '(v1.3) Orders of a task list. Every order is total (ties broken by task id) and stable across pages.',
  values: {
    LAST_ACTIVITY: { description: 'Newest lastActivityAt first (the default).' },
    CREATED: { description: 'Newest created first.' },
    NEEDS_ATTENTION: {
      description:
        'Tasks waiting on their user first (oldest waitingSince first), then tasks with an activeError, then the rest by LAST_ACTIVITY.',
    },
  } satisfies Record<TaskOrder, unknown>,
})

const TaskEdgeRef = builder.objectRef<TaskPage['edges'][number]>('TaskEdge').implement({
  fields: (t) => ({
    cursor: t.exposeString('cursor'),
    node: t.expose('node', { type: TaskRef }),
  }),
})

const PageInfoRef = builder.objectRef<TaskPage>('PageInfo').implement({
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    endCursor: t.string({ nullable: true, resolve: ({ edges }) => edges.at(-1)?.cursor ?? null }),
  }),
})

export const TaskConnectionRef = builder.objectRef<TaskPage>('TaskConnection').implement({
  fields: (t) => ({
    edges: t.expose('edges', { type: [TaskEdgeRef] }),
    pageInfo: t.field({ type: PageInfoRef, resolve: (page) => page }),
  }),
})

/**
 * Shared by Query.tasks and BootState.tasks (always the default order): validated arguments, one
 * page, no per-task query. When the selection asks for the tasks' statusSummary, the page's
 * statement reads the stored summaries too and the loader is primed with them, reconciled.
 */
export async function taskPage(
  ctx: Context,
  info: GraphQLResolveInfo,
  workspaceId: string,
  first: number,
  after: string | null | undefined,
  order: TaskOrder = 'LAST_ACTIVITY',
): Promise<TaskPage> {
  intInRange('first', first, 0, MAX_TASKS_PAGE)
  const cursor = after ? decodeTaskCursor(after, order) : undefined
  await requireWorkspaceMember(ctx, workspaceId)
  // The attention order is read from the stored summaries: a task without one yet gets it first.
  if (order === 'NEEDS_ATTENTION') await ctx.projector.ensureWorkspaceRows(workspaceId)
  const summaries = selectsPath(info, ['edges', 'node', 'statusSummary'])
  const page = await listTasks(ctx.store, workspaceId, first, order, cursor, { summaries })
  for (const task of page.tasks) ctx.loaders.task.prime(task.id, task)
  if (page.summaries) await primeSummaries(ctx, page.tasks, page.summaries)
  return { edges: page.tasks.map((node, i) => ({ node, cursor: encodeTaskCursor(page.positions[i]!) })), hasNextPage: page.hasNextPage }
}

async function primeSummaries(ctx: Context, tasks: TaskRow[], rows: Map<string, SummaryReadRow>) {
  const ids = tasks.map((t) => t.id)
  let summaries: Map<string, StoredSummary>
  try {
    summaries = await ctx.projector.reconcile(ids, [...rows.values()])
  } catch (error) {
    // Each statusSummary then loads its own, as it would without the page's rows (and fails or not alike).
    ctx.logger.warn({ err: error }, 'reading the page summaries failed; each summary is loaded on its own')
    return
  }
  for (const id of ids) {
    const summary = summaries.get(id)
    ctx.loaders.knownSummaries.set(id, summary ? summaryView(summary) : null)
  }
}

builder.queryFields((t) => ({
  task: t.field({
    type: TaskRef,
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => requireReadableTask(ctx, id),
  }),
  tasks: t.field({
    type: TaskConnectionRef,
    description:
      'Task list of one workspace, newest activity first. Every task carries its latest statusSummary; no per-task query is made to resolve them.',
    args: {
      workspaceId: t.arg.id({ required: true }),
      first: t.arg.int({ defaultValue: 100 }),
      after: t.arg.string(),
      orderBy: t.arg({ type: TaskOrderEnum, defaultValue: 'LAST_ACTIVITY', description: '(v1.3)' }),
    },
    resolve: (_root, args, ctx, info) => taskPage(ctx, info, args.workspaceId, args.first ?? 100, args.after, args.orderBy ?? 'LAST_ACTIVITY'),
  }),
}))

const TaskRepositoryInput = builder.inputType('TaskRepositoryInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    localPath: t.string(),
    baseBranch: t.string(),
    branch: t.string(),
  }),
})

const CreateTaskInput = builder.inputType('CreateTaskInput', {
  fields: (t) => ({
    workspaceId: t.id({ required: true }),
    title: t.string({ required: true }),
    description: t.string(),
    workflowStepId: t.id({ description: "Defaults to the workspace's first workflow step." }),
    repositories: t.field({ type: [TaskRepositoryInput] }),
  }),
})

const UpdateTaskInput = builder.inputType('UpdateTaskInput', {
  fields: (t) => ({
    title: t.string(),
    description: t.string(),
    workflowStepId: t.id(),
  }),
})

/**
 * Replaces each localPath by its real path, or refuses the input when one does not resolve to a
 * directory inside REPOSITORY_ROOTS: the Git monitor and the agents work in that directory.
 */
async function confinedRepositories<R extends Pick<NewTaskRepository, 'localPath'>>(ctx: Context, repositories: R[]): Promise<R[]> {
  return Promise.all(
    repositories.map(async (repository) => {
      if (repository.localPath == null) return repository
      const check = await checkLocalPath(repository.localPath, ctx.repositoryRoots)
      if (!check.ok)
        throw badInput(
          check.reason === 'not-absolute'
            ? 'repositories.localPath must be an absolute path.'
            : 'repositories.localPath must be an existing directory inside one of the REPOSITORY_ROOTS.',
          'repositories.localPath',
        )
      return { ...repository, localPath: check.realPath }
    }),
  )
}

function stepError(error: unknown): never {
  if (error instanceof StepNotInWorkspace)
    throw badInput('workflowStepId is not a step of this task’s workspace.', 'workflowStepId')
  throw error
}

builder.mutationFields((t) => ({
  createTask: t.field({
    type: TaskRef,
    args: { input: t.arg({ type: CreateTaskInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const repositories = input.repositories ?? []
      if (repositories.length > MAX_REPOSITORIES)
        throw badInput(`A task has at most ${MAX_REPOSITORIES} repositories.`, 'repositories')
      const validated = {
        workspaceId: input.workspaceId,
        title: boundedText('title', input.title, { max: MAX_TITLE }),
        description: optionalText('description', input.description, MAX_DESCRIPTION),
        workflowStepId: input.workflowStepId,
        repositories: repositories.map((r) => ({
          name: boundedText('repositories.name', r.name, { max: 200 }),
          localPath: optionalText('repositories.localPath', r.localPath, 4096),
          baseBranch: optionalText('repositories.baseBranch', r.baseBranch, 255),
          branch: optionalText('repositories.branch', r.branch, 255),
        })),
      }
      await requireWorkspaceMember(ctx, input.workspaceId)
      // After the membership check: only members may learn whether a path is acceptable.
      validated.repositories = await confinedRepositories(ctx, validated.repositories)
      const task = await createTask(ctx.store, validated).catch(stepError)
      // Its summary row exists before the answer: the next tasks(orderBy: NEEDS_ATTENTION), on any
      // instance, lists it (the projection never rejects; a failed one is retried in the background).
      await ctx.projector.project(task.id)
      return task
    },
  }),
  updateTask: t.field({
    type: TaskRef,
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateTaskInput, required: true }) },
    resolve: async (_root, { id, input }, ctx) => {
      if (input.title === null) throw badInput('title cannot be null.', 'title')
      if (input.workflowStepId === null) throw badInput('workflowStepId cannot be null.', 'workflowStepId')
      const changes = {
        title: input.title === undefined ? undefined : boundedText('title', input.title, { max: MAX_TITLE }),
        description: optionalText('description', input.description, MAX_DESCRIPTION),
        workflowStepId: input.workflowStepId,
      }
      await requireReadableTask(ctx, id)
      const task = await updateTask(ctx.store, id, changes).catch(stepError)
      const step = await ctx.loaders.step.load(task.workflowStepId)
      if (step?.terminal) await ctx.sessions.completeTaskSessions(task.id)
      return task
    },
  }),
  deleteTask: t.id({
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await requireReadableTask(ctx, id)
      const task = await deleteTask(ctx.store, id).catch((error: unknown) => {
        // Deleted concurrently by another request between the read and the delete.
        if ((error as { code?: string }).code === 'P2025') throw notFound('Task', id)
        throw error
      })
      return task.id
    },
  }),
}))
