// The database itself keeps pull-request data under a link: on each provider, a row without a
// link is refused and unlinking removes the rows.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { recordPullRequest } from '../../src/store/pull-requests.ts'
import { linkRepository, unlinkRepository, workspacesLinkedTo } from '../../src/store/github-links.ts'

describe.each(PROVIDERS)('pull-request observations under links (%s)', (provider) => {
  let w: ProjectorWorld
  beforeEach(async () => (w = await projectorWorld(provider)))
  afterEach(() => w?.close())

  const observation = (taskId: string | null) => ({
    workspaceId: w.workspaceId,
    repository: 'Acme/Web',
    number: 1,
    taskId,
    taskRepositoryId: null,
    url: 'https://github.com/Acme/Web/pull/1',
    title: 'Fix',
    headBranch: 'fix',
    state: 'OPEN' as const,
    draft: false,
    checks: 'NONE' as const,
    reviewDecision: null,
    mergeableState: null,
  })

  it('stores nothing for a workspace without a link (an unlink that raced the delivery)', async () => {
    const task = await w.newTask()
    expect(await recordPullRequest(w.store, observation(task.id))).toBeUndefined()
    expect(await w.store.db.pullRequestObservation.count()).toBe(0)
  })

  it('links case-insensitively, and unlinking deletes the rows and re-derives the summary without them', async () => {
    const task = await w.newTask()
    await linkRepository(w.store, w.workspaceId, 'acme/web')
    expect(await workspacesLinkedTo(w.store, 'ACME/web')).toEqual([w.workspaceId])
    expect(await recordPullRequest(w.store, observation(task.id))).toMatchObject({ repository: 'Acme/Web', linkedRepository: 'acme/web' })
    expect((await w.summary(task.id)).payload.pullRequest).toMatchObject({ count: 1 })
    await unlinkRepository(w.store, w.workspaceId, 'ACME/WEB')
    expect(await w.store.db.pullRequestObservation.count()).toBe(0)
    expect(await workspacesLinkedTo(w.store, 'acme/web')).toEqual([])
    await w.projector.idle()
    expect(w.published.at(-1)?.summary.pullRequest).toBeNull()
  })
})
