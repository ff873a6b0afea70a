import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { sign } from '../../src/github/signature.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import {
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  LinkGitHubRepositoryDocument,
  SetPullRequestAutomationDocument,
  TaskPullRequestsDocument,
  TaskStatusSummariesDocument,
  TaskStatusSummaryUpdatedDocument,
  UnlinkGitHubRepositoryDocument,
  ViewerDocument,
  ViewerGitHubRepositoriesDocument,
} from '../generated/graphql.ts'

const SECRET = 'webhook-secret-for-tests'

describe('GitHub webhooks → pull-request observations → summaries (sqlite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer('sqlite', { env: { GITHUB_WEBHOOK_SECRET: SECRET } })
    token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'dev' })).createUser.token
    workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: 'gh' })).createWorkspace.id
  })
  afterAll(() => server?.close())

  async function deliver(event: string, body: unknown, options: { signature?: string; delivery?: string; raw?: string } = {}) {
    const raw = options.raw ?? JSON.stringify(body)
    const response = await fetch(`${server.url}/webhooks/github`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': options.delivery ?? randomUUID(),
        'x-hub-signature-256': options.signature ?? sign(SECRET, raw),
      },
      body: raw,
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  const repoName = () => `acme/web-${randomUUID().slice(0, 8)}`
  const pr = (repository: string, number: number, extra: object = {}) => ({
    action: 'opened',
    repository: { full_name: repository },
    pull_request: {
      number,
      html_url: `https://github.com/${repository}/pull/${number}`,
      title: 'Fix login',
      state: 'open',
      merged: false,
      draft: false,
      mergeable_state: 'clean',
      head: { ref: 'fix-login' },
      ...extra,
    },
  })
  const link = (workspace: string, repository: string) =>
    ok(server.graphqlUrl, server.adminToken, LinkGitHubRepositoryDocument, { workspaceId: workspace, repository })
  const taskWith = async (owner: { token: string; workspaceId: string }, repository: string) =>
    (await ok(server.graphqlUrl, owner.token, CreateTaskDocument, {
      input: { workspaceId: owner.workspaceId, title: 'pr', repositories: [{ name: repository, branch: 'fix-login' }] },
    })).createTask.id
  /** A task of the test's workspace on a repository that workspace links. */
  async function linkedTask() {
    const repository = repoName()
    await link(workspaceId, repository)
    return { repository, taskId: await taskWith({ token, workspaceId }, repository) }
  }
  const summary = async (taskId: string, as = token) => {
    await server.projector.idle()
    return (await ok(server.graphqlUrl, as, TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!
  }
  const pullRequestsOf = async (taskId: string, as = token) =>
    (await ok(server.graphqlUrl, as, TaskPullRequestsDocument, { id: taskId })).task!.pullRequests

  it('refuses a bad signature with 401, ignores unknown events with 202, rejects malformed bodies with 400, and stores nothing then', async () => {
    const { repository } = await linkedTask()
    const before = await server.store.db.pullRequestObservation.count()
    const deliveries = await server.store.db.webhookDelivery.count()
    expect((await deliver('pull_request', pr(repository, 1), { signature: 'sha256=' + '0'.repeat(64) })).status).toBe(401)
    expect((await deliver('pull_request', pr(repository, 1), { signature: sign('other-secret', JSON.stringify(pr(repository, 1))) })).status).toBe(401)
    expect((await deliver('issues', { action: 'opened', repository: { full_name: repository } })).status).toBe(202)
    expect((await deliver('pull_request', undefined, { raw: '{not json' })).status).toBe(400)
    expect((await deliver('pull_request', { repository: { full_name: repository } })).status).toBe(400)
    expect(await server.store.db.pullRequestObservation.count()).toBe(before)
    expect(await server.store.db.webhookDelivery.count()).toBe(deliveries)
  })

  it('links a pull request to the task repository by name and head branch, and de-duplicates deliveries', async () => {
    const { repository, taskId } = await linkedTask()
    const delivery = randomUUID()
    expect((await deliver('pull_request', pr(repository, 7), { delivery })).status).toBe(200)
    expect((await deliver('pull_request', pr(repository, 7, { title: 'replayed' }), { delivery })).body).toEqual({ duplicate: true })
    const row = await server.store.db.pullRequestObservation.findUniqueOrThrow({
      where: { workspaceId_repository_number: { workspaceId, repository, number: 7 } },
    })
    expect(row).toMatchObject({ taskId, title: 'Fix login', state: 'OPEN', headBranch: 'fix-login' })
    expect((await summary(taskId)).pullRequest).toMatchObject({ count: 1, openCount: 1, representative: { repository, number: 7 } })
  })

  it('reaches every aggregate state from GitHub payloads', async () => {
    const cases: [string, (repository: string) => [string, unknown][]][] = [
      ['READY', (r) => [['pull_request', pr(r, 1)]]],
      ['DRAFT', (r) => [['pull_request', pr(r, 1, { draft: true })]]],
      ['BLOCKED', (r) => [['pull_request', pr(r, 1, { mergeable_state: 'dirty' })]]],
      ['PENDING', (r) => [['pull_request', pr(r, 1)], ['check_suite', { repository: { full_name: r }, check_suite: { status: 'in_progress', conclusion: null, pull_requests: [{ number: 1 }] } }]]],
      ['FAILURE', (r) => [['pull_request', pr(r, 1)], ['check_run', { repository: { full_name: r }, check_run: { status: 'completed', conclusion: 'failure', pull_requests: [{ number: 1 }] } }]]],
      ['PASSING', (r) => [['pull_request', pr(r, 1)], ['check_run', { repository: { full_name: r }, check_run: { status: 'completed', conclusion: 'success', pull_requests: [{ number: 1 }] } }]]],
      ['AWAITING_REVIEW', (r) => [['pull_request', { ...pr(r, 1), action: 'review_requested' }]]],
      ['FAILURE', (r) => [['pull_request_review', { ...pr(r, 1), action: 'submitted', review: { state: 'changes_requested' } }]]],
      ['READY', (r) => [['pull_request', { ...pr(r, 1), action: 'review_requested' }], ['pull_request_review', { ...pr(r, 1), action: 'submitted', review: { state: 'approved' } }]]],
      ['MERGED', (r) => [['pull_request', pr(r, 1, { state: 'closed', merged: true })]]],
      ['CLOSED', (r) => [['pull_request', pr(r, 1, { state: 'closed', merged: false })]]],
    ]
    for (const [expected, deliveries] of cases) {
      const { repository, taskId } = await linkedTask()
      for (const [event, body] of deliveries(repository)) expect((await deliver(event, body)).status).toBe(200)
      expect((await summary(taskId)).pullRequest?.aggregateState, expected).toBe(expected)
    }
  })

  it('GIVEN an active linked PR changes auto-fix or auto-merge, THEN the replacement summary updates the indicators without a per-row request', async () => {
    const { repository, taskId } = await linkedTask()
    await deliver('pull_request', pr(repository, 3))
    const client = await wsClient(server.wsUrl, token)
    const feed = wsSubscribe(client, TaskStatusSummaryUpdatedDocument, { workspaceId })
    await wsExecute(client, ViewerDocument)
    const before = await summary(taskId)
    const { setPullRequestAutomation } = await ok(server.graphqlUrl, token, SetPullRequestAutomationDocument, {
      input: { taskId, repository, number: 3, autoFix: true },
    })
    expect(setPullRequestAutomation.number).toBe(3)
    for (let n = 1; ; n++) {
      const events = await feed.waitFor(n)
      const mine = events.map((e) => e.data?.taskStatusSummaryUpdated).find((u) => u?.taskId === taskId && u.summary.pullRequest?.autoFixEnabled)
      if (mine) {
        expect(mine.summary.revision).toBeGreaterThan(before.revision)
        expect(mine.summary.pullRequest).toMatchObject({ autoFixEnabled: true, autoMergeEnabled: false })
        expect(mine.summary.lastActivityAt).toBe(before.lastActivityAt)
        break
      }
    }
    feed.dispose()
    await client.dispose()
    const unknown = await http(server.graphqlUrl, token, SetPullRequestAutomationDocument, { input: { taskId, repository, number: 999, autoMerge: true } })
    expect(errorCodes(unknown)).toEqual(['NOT_FOUND'])
  })

  it('GIVEN two workspaces with task repositories of the same name and branch, WHEN only one links the repository, THEN only that one receives the pull request', async () => {
    const repository = repoName()
    const linked = await userWithWorkspace(server, 'linked')
    const other = await userWithWorkspace(server, 'other')
    await link(linked.workspaceId, repository)
    const linkedTaskId = await taskWith(linked, repository)
    const otherTaskId = await taskWith(other, repository)
    expect((await deliver('pull_request', pr(repository, 11))).status).toBe(200)
    expect((await deliver('check_run', { repository: { full_name: repository }, check_run: { status: 'completed', conclusion: 'failure', pull_requests: [{ number: 11 }] } })).status).toBe(200)

    expect((await summary(linkedTaskId, linked.token)).pullRequest).toMatchObject({ count: 1, aggregateState: 'FAILURE', representative: { repository, number: 11 } })
    expect((await pullRequestsOf(linkedTaskId, linked.token)).map((p) => p.number)).toEqual([11])
    expect((await summary(otherTaskId, other.token)).pullRequest).toBeNull()
    expect(await pullRequestsOf(otherTaskId, other.token)).toEqual([])
    expect(await server.store.db.pullRequestObservation.count({ where: { workspaceId: other.workspaceId } })).toBe(0)
    expect(await server.store.db.pullRequestObservation.count({ where: { repository } })).toBe(1)
  })

  it('GIVEN both workspaces link the repository, THEN each gets its own observation and automation flags stay per workspace', async () => {
    const repository = repoName()
    const a = await userWithWorkspace(server, 'a')
    const b = await userWithWorkspace(server, 'b')
    await link(a.workspaceId, repository)
    await link(b.workspaceId, repository.toUpperCase()) // GitHub names are case-insensitive
    const aTask = await taskWith(a, repository)
    const bTask = await taskWith(b, repository)
    expect((await deliver('pull_request', pr(repository, 5))).status).toBe(200)
    await ok(server.graphqlUrl, a.token, SetPullRequestAutomationDocument, { input: { taskId: aTask, repository, number: 5, autoFix: true } })
    expect((await summary(aTask, a.token)).pullRequest).toMatchObject({ count: 1, autoFixEnabled: true })
    expect((await summary(bTask, b.token)).pullRequest).toMatchObject({ count: 1, autoFixEnabled: false })
    // A member of one workspace cannot reach the other's observation through its own task.
    const foreign = await http(server.graphqlUrl, a.token, SetPullRequestAutomationDocument, { input: { taskId: bTask, repository, number: 5, autoMerge: true } })
    expect(errorCodes(foreign)).toEqual(['FORBIDDEN'])
  })

  it('answers a delivery for a repository no workspace links with 202 and stores nothing: no observation, no delivery id', async () => {
    const repository = repoName()
    const taskId = await taskWith({ token, workspaceId }, repository) // same name and branch, but not linked
    const observations = await server.store.db.pullRequestObservation.count()
    const deliveries = await server.store.db.webhookDelivery.count()
    const delivery = randomUUID()
    expect(await deliver('pull_request', pr(repository, 9), { delivery })).toEqual({ status: 202, body: { unlinked: true } })
    expect(await deliver('check_suite', { repository: { full_name: repository }, check_suite: { status: 'queued', pull_requests: [{ number: 9 }] } })).toMatchObject({ status: 202 })
    expect(await server.store.db.pullRequestObservation.count()).toBe(observations)
    expect(await server.store.db.webhookDelivery.count()).toBe(deliveries)
    expect((await summary(taskId)).pullRequest).toBeNull()
    // Linked later, the same delivery id is not mistaken for a duplicate: nothing was recorded.
    await link(workspaceId, repository)
    expect((await deliver('pull_request', pr(repository, 9), { delivery })).status).toBe(200)
    expect((await summary(taskId)).pullRequest).toMatchObject({ count: 1 })
  })

  it('unlinking removes the workspace’s pull-request data of that repository, and later deliveries are not stored', async () => {
    const { repository, taskId } = await linkedTask()
    await deliver('pull_request', pr(repository, 2))
    expect((await summary(taskId)).pullRequest).toMatchObject({ count: 1 })
    const { unlinkGitHubRepository } = await ok(server.graphqlUrl, server.adminToken, UnlinkGitHubRepositoryDocument, { workspaceId, repository })
    expect(unlinkGitHubRepository.githubRepositories).not.toContain(repository)
    expect((await summary(taskId)).pullRequest).toBeNull()
    expect(await pullRequestsOf(taskId)).toEqual([])
    expect((await deliver('pull_request', pr(repository, 2, { title: 'again' }))).status).toBe(202)
    expect(await server.store.db.pullRequestObservation.count({ where: { repository } })).toBe(0)
  })

  it('link and unlink are admin only, validate owner/name and the workspace, and are listed on the workspace', async () => {
    const repository = repoName()
    expect(errorCodes(await http(server.graphqlUrl, token, LinkGitHubRepositoryDocument, { workspaceId, repository }))).toEqual(['FORBIDDEN'])
    expect(errorCodes(await http(server.graphqlUrl, token, UnlinkGitHubRepositoryDocument, { workspaceId, repository }))).toEqual(['FORBIDDEN'])
    expect(await server.store.db.gitHubRepositoryLink.count({ where: { repository } })).toBe(0)
    for (const bad of ['widgets', 'acme/', '/widgets', 'acme/wid/gets', 'ac me/widgets', '-acme/widgets', 'acme/..', 'https://github.com/acme/widgets'])
      expect(errorCodes(await http(server.graphqlUrl, server.adminToken, LinkGitHubRepositoryDocument, { workspaceId, repository: bad })), bad).toEqual(['BAD_USER_INPUT'])
    expect(errorCodes(await http(server.graphqlUrl, server.adminToken, LinkGitHubRepositoryDocument, { workspaceId: 'missing', repository }))).toEqual(['NOT_FOUND'])
    expect(await server.store.db.gitHubRepositoryLink.count({ where: { workspaceId } })).toBe(
      (await ok(server.graphqlUrl, token, ViewerGitHubRepositoriesDocument)).viewer.workspaces.find((w) => w.id === workspaceId)!.githubRepositories.length,
    )
    const { linkGitHubRepository } = await link(workspaceId, ` ${repository.replace('acme', 'ACME')} `)
    expect(linkGitHubRepository.githubRepositories).toContain(repository)
    await link(workspaceId, repository) // idempotent
    const listed = (await ok(server.graphqlUrl, token, ViewerGitHubRepositoriesDocument)).viewer.workspaces.find((w) => w.id === workspaceId)!
    expect(listed.githubRepositories.filter((r) => r === repository)).toHaveLength(1)
  })

  it('refuses every delivery while GITHUB_WEBHOOK_SECRET is unset', async () => {
    const other = await startTestServer('sqlite')
    try {
      const raw = JSON.stringify(pr('acme/x', 1))
      const response = await fetch(`${other.url}/webhooks/github`, {
        method: 'POST',
        headers: { 'x-github-event': 'pull_request', 'x-github-delivery': 'd1', 'x-hub-signature-256': sign(SECRET, raw) },
        body: raw,
      })
      expect(response.status).toBe(503)
      expect(await other.store.db.pullRequestObservation.count()).toBe(0)
    } finally {
      await other.close()
    }
  })
})
