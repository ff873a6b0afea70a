import DataLoader from 'dataloader'
import { groupBy } from '../util/group-by.ts'
import type { Store } from '../store/store.ts'
import type { Projector } from '../projector/projector.ts'
import { summaryView, type SummaryView } from '../summary/view.ts'
import { findTasks, pullRequestsOfTasks, repositoriesOfTasks, sessionsOfTasks, tasksOfSteps } from '../store/tasks.ts'
import { findSteps, findWorkspaces, membersOfWorkspaces, memberWorkspaceIds, stepsOfWorkspaces } from '../store/workspaces.ts'
import { findUsers } from '../store/users.ts'
import { linksOfWorkspaces } from '../store/github-links.ts'
import { findSessions, gitOfSessions, latestMessagesOfSessions, latestTurnsOfSessions } from '../store/sessions.ts'

function byId<K, V>(keys: readonly K[], rows: V[], keyOf: (row: V) => K): (V | null)[] {
  const map = new Map(rows.map((r) => [keyOf(r), r]))
  return keys.map((k) => map.get(k) ?? null)
}

function grouped<K, V>(keys: readonly K[], rows: V[], keyOf: (row: V) => K): V[][] {
  const map = groupBy(rows, keyOf)
  return keys.map((k) => map.get(k) ?? [])
}

/** One batching loader per page size: sessions asked for with the same `last` share one batch. */
function perPageSize<V>(load: (ids: readonly string[], last: number) => Promise<Map<string, V[]>>) {
  const loaders = new Map<number, DataLoader<string, V[]>>()
  return (last: number) => {
    let loader = loaders.get(last)
    if (!loader) {
      loader = new DataLoader(async (ids: readonly string[]) => {
        const rows = await load(ids, last)
        return ids.map((id) => rows.get(id) ?? [])
      })
      loaders.set(last, loader)
    }
    return loader
  }
}

interface LoaderScope {
  store: Store
  projector: Projector
  userId: string | undefined
}

/** How each loader is made; one is made only when a resolver first asks for it. */
const LOADERS = {
  /** Stored summaries, with missing or stale ones rebuilt in the same batch, as TaskStatusSummary serves them. */
  statusSummary: ({ projector }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => {
      const summaries = await projector.ensure(ids)
      return ids.map((id) => {
        const summary = summaries.get(id)
        return summary ? summaryView(summary) : null
      })
    }),
  task: ({ store }: LoaderScope) => new DataLoader(async (ids: readonly string[]) => byId(ids, await findTasks(store, ids), (t) => t.id)),
  workspace: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => byId(ids, await findWorkspaces(store, ids), (w) => w.id)),
  user: ({ store }: LoaderScope) => new DataLoader(async (ids: readonly string[]) => byId(ids, await findUsers(store.db, ids), (u) => u.id)),
  step: ({ store }: LoaderScope) => new DataLoader(async (ids: readonly string[]) => byId(ids, await findSteps(store, ids), (s) => s.id)),
  githubRepositoriesOfWorkspace: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) =>
      grouped(ids, await linksOfWorkspaces(store, ids), (l) => l.workspaceId).map((links) => links.map((l) => l.repository)),
    ),
  membersOfWorkspace: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) =>
      grouped(ids, await membersOfWorkspaces(store, ids), (m) => m.workspaceId).map((rows) => rows.map((m) => m.user)),
    ),
  stepsOfWorkspace: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => grouped(ids, await stepsOfWorkspaces(store, ids), (s) => s.workspaceId)),
  tasksOfStep: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => grouped(ids, await tasksOfSteps(store, ids), (t) => t.workflowStepId)),
  repositoriesOfTask: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => grouped(ids, await repositoriesOfTasks(store, ids), (r) => r.taskId)),
  sessionsOfTask: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => grouped(ids, await sessionsOfTasks(store, ids), (s) => s.taskId)),
  pullRequestsOfTask: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => grouped(ids, await pullRequestsOfTasks(store, ids), (p) => p.taskId)),
  session: ({ store }: LoaderScope) => new DataLoader(async (ids: readonly string[]) => byId(ids, await findSessions(store, ids), (s) => s.id)),
  /** The newest `last` messages of a session, oldest first. */
  latestMessagesOfSession: ({ store }: LoaderScope) => perPageSize((ids, last) => latestMessagesOfSessions(store, ids, last)),
  /** The newest `last` turns of a session, oldest first. */
  latestTurnsOfSession: ({ store }: LoaderScope) => perPageSize((ids, last) => latestTurnsOfSessions(store, ids, last)),
  gitOfSession: ({ store }: LoaderScope) =>
    new DataLoader(async (ids: readonly string[]) => grouped(ids, await gitOfSessions(store, ids), (g) => g.sessionId)),
  /** Whether the caller is a member of each workspace. */
  isMember: ({ store, userId }: LoaderScope) =>
    new DataLoader(async (workspaceIds: readonly string[]) => {
      if (!userId) return workspaceIds.map(() => false)
      const member = await memberWorkspaceIds(store, userId, workspaceIds)
      return workspaceIds.map((id) => member.has(id))
    }),
}

export type Loaders = { readonly [K in keyof typeof LOADERS]: ReturnType<(typeof LOADERS)[K]> } & {
  /**
   * Summaries a task list already read with its page and reconciled (taskPage), null for a task
   * that has none: Task.statusSummary takes these as they are, with no promise, so a page of 500
   * rows completes synchronously instead of through 500 loader promises.
   */
  readonly knownSummaries: Map<string, SummaryView | null>
}

/**
 * Every context has loaders, but most operations use two or three of them, and a subscription's
 * context lives as long as the subscription: each loader is made on first use, so an idle
 * subscription holds one small object instead of sixteen loaders with their caches.
 */
class LazyLoaders {
  readonly made: Partial<Record<keyof typeof LOADERS, unknown>> = {}
  #knownSummaries?: Map<string, SummaryView | null>
  constructor(readonly scope: LoaderScope) {}
  get knownSummaries() {
    return (this.#knownSummaries ??= new Map())
  }
}
for (const name of Object.keys(LOADERS) as (keyof typeof LOADERS)[])
  Object.defineProperty(LazyLoaders.prototype, name, {
    get(this: LazyLoaders) {
      return (this.made[name] ??= LOADERS[name](this.scope))
    },
  })

/**
 * Batching loaders, created per request (and per subscription event) so that nothing is cached
 * across requests: every operation reads the authoritative records as they are now.
 */
export function createLoaders({ store, projector }: { store: Store; projector: Projector }, userId: string | undefined): Loaders {
  return new LazyLoaders({ store, projector, userId }) as unknown as Loaders
}
