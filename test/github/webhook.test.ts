import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { errorCodes, http, ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { sign } from '../../src/github/signature.ts'
import {
  CreateTaskDocument,
  CreateUserDocument,
  CreateWorkspaceDocument,
  SetPullRequestAutomationDocument,
  TaskStatusSummariesDocument,
  TaskStatusSummaryUpdatedDocument,
  ViewerDocument,
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
  async function linkedTask() {
    const repository = repoName()
    const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, {
      input: { workspaceId, title: 'pr', repositories: [{ name: repository, branch: 'fix-login' }] },
    })).createTask.id
    return { repository, taskId }
  }
  const summary = async (taskId: string) => {
    await server.projector.idle()
    return (await ok(server.graphqlUrl, token, TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!
  }

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
    const row = await server.store.db.pullRequestObservation.findUniqueOrThrow({ where: { repository_number: { repository, number: 7 } } })
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
