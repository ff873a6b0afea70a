// Which workspaces a GitHub repository's deliveries may reach: links set by the admin.
import type { Store } from './store.ts'
import { raise } from './events.ts'

/** GitHub treats owner/name case-insensitively, so links are keyed by the lower-case full name. */
export function repositoryKey(fullName: string): string {
  return fullName.toLowerCase()
}

export async function linkRepository({ db }: Store, workspaceId: string, repository: string): Promise<void> {
  const key = { workspaceId, repository: repositoryKey(repository) }
  await db.gitHubRepositoryLink.upsert({ where: { workspaceId_repository: key }, create: key, update: {} })
}

/**
 * Removes the link and, through the foreign key, every pull-request observation the workspace
 * holds under it; the tasks that showed one re-derive their summaries without it.
 */
export async function unlinkRepository(store: Store, workspaceId: string, repository: string): Promise<void> {
  const key = { workspaceId, repository: repositoryKey(repository) }
  const affected = await store.db.$transaction(async (tx) => {
    const observations = await tx.pullRequestObservation.findMany({
      where: { workspaceId, linkedRepository: key.repository, taskId: { not: null } },
      select: { taskId: true },
      distinct: ['taskId'],
    })
    await tx.gitHubRepositoryLink.deleteMany({ where: key })
    return observations.map((o) => o.taskId!)
  })
  for (const taskId of affected) raise(store, { kind: 'pullRequest.observed', taskId, workspaceId })
}

export function linksOfWorkspaces({ db }: Store, workspaceIds: readonly string[]) {
  return db.gitHubRepositoryLink.findMany({
    where: { workspaceId: { in: [...workspaceIds] } },
    orderBy: [{ workspaceId: 'asc' }, { repository: 'asc' }],
  })
}

export async function workspacesLinkedTo({ db }: Store, repository: string): Promise<string[]> {
  const links = await db.gitHubRepositoryLink.findMany({
    where: { repository: repositoryKey(repository) },
    select: { workspaceId: true },
    orderBy: { workspaceId: 'asc' },
  })
  return links.map((l) => l.workspaceId)
}
