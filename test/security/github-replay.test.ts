// A captured, signed GitHub delivery sent again under a new X-GitHub-Delivery id (or any delivery
// that arrives late) must not set a pull request back: per pull request, its checks and its
// review decision, what GitHub stamped older than what is stored changes nothing. In-order
// deliveries, including several with the same updated_at, still apply. Contract MAPPING.md,
// "Access that ends when it should (v1.3)", GitHub deliveries.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { PROVIDERS } from '../support/databases.ts'
import { sign } from '../../src/github/signature.ts'
import { CreateTaskDocument, CreateWorkspaceDocument, LinkGitHubRepositoryDocument, TaskStatusSummariesDocument } from '../generated/graphql.ts'

const SECRET = 'replay-secret-for-tests'
const at = (time: string) => `2026-12-06T${time}Z`

type Delivery = [event: string, body: object]

const pullRequest = (repository: string, updatedAt: string, fields: object = {}, action = 'synchronize'): Delivery => [
  'pull_request',
  {
    action,
    repository: { full_name: repository },
    pull_request: {
      number: 1,
      html_url: `https://github.com/${repository}/pull/1`,
      title: 'Fix login',
      state: 'open',
      merged: false,
      draft: false,
      mergeable_state: 'clean',
      head: { ref: 'fix-login' },
      updated_at: at(updatedAt),
      ...fields,
    },
  },
]
const opened = (repository: string, updatedAt: string) => pullRequest(repository, updatedAt, {}, 'opened')
const closedMerged = (repository: string, updatedAt: string) =>
  pullRequest(repository, updatedAt, { state: 'closed', merged: true, merged_at: at(updatedAt) }, 'closed')
const checkRun = (repository: string, conclusion: 'success' | 'failure', completedAt: string): Delivery => [
  'check_run',
  {
    action: 'completed',
    repository: { full_name: repository },
    check_run: { status: 'completed', conclusion, started_at: at('09:00:00'), completed_at: at(completedAt), pull_requests: [{ number: 1 }] },
  },
]
const review = (repository: string, state: 'approved' | 'changes_requested', submittedAt: string): Delivery => [
  'pull_request_review',
  { ...pullRequest(repository, '09:00:00')[1], action: 'submitted', review: { state, submitted_at: at(submittedAt) } },
]

describe.each(PROVIDERS)('GitHub deliveries never set a pull request back (%s)', (provider) => {
  let server: TestServer
  let workspaceId: string

  beforeAll(async () => {
    server = await startTestServer(provider, { env: { GITHUB_WEBHOOK_SECRET: SECRET } })
    workspaceId = (await ok(server.graphqlUrl, server.adminToken, CreateWorkspaceDocument, { name: 'replay' })).createWorkspace.id
  })
  afterAll(() => server?.close())

  /** Signed by GitHub's secret, as a captured delivery is; a fresh delivery id unless given. */
  async function deliver([event, body]: Delivery, delivery = randomUUID()) {
    const raw = JSON.stringify(body)
    const response = await fetch(`${server.url}/webhooks/github`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': event, 'x-github-delivery': delivery, 'x-hub-signature-256': sign(SECRET, raw) },
      body: raw,
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  /** A repository the workspace links, with a task on the pull request's head branch. */
  async function linkedTask() {
    const repository = `acme/replay-${randomUUID().slice(0, 8)}`
    await ok(server.graphqlUrl, server.adminToken, LinkGitHubRepositoryDocument, { workspaceId, repository })
    const { createTask } = await ok(server.graphqlUrl, server.adminToken, CreateTaskDocument, {
      input: { workspaceId, title: 'pr', repositories: [{ name: repository, branch: 'fix-login' }] },
    })
    return { repository, taskId: createTask.id }
  }
  const observation = (repository: string) =>
    server.store.db.pullRequestObservation.findUniqueOrThrow({ where: { workspaceId_repository_number: { workspaceId, repository, number: 1 } } })
  const summary = async (taskId: string) => {
    await server.projector.idle()
    return (await ok(server.graphqlUrl, server.adminToken, TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!
  }

  it('an opened delivery (10:00) replayed under a new id after closed+merged (10:05) changes nothing: still MERGED, no summary revision, answered 200 and recorded', async () => {
    const { repository, taskId } = await linkedTask()
    const captured = opened(repository, '10:00:00')
    expect((await deliver(captured)).status).toBe(200)
    expect((await deliver(closedMerged(repository, '10:05:00'))).body).toEqual({ applied: 1 })
    const before = { row: await observation(repository), summary: await summary(taskId) }
    expect(before.row.state).toBe('MERGED')
    expect(before.summary.pullRequest?.aggregateState).toBe('MERGED')

    const replay = randomUUID()
    expect(await deliver(captured, replay)).toEqual({ status: 200, body: { applied: 0, stale: 1 } })
    expect(await observation(repository)).toEqual(before.row) // not even updatedAt moved
    expect((await summary(taskId)).revision).toBe(before.summary.revision)
    expect(await server.store.db.webhookDelivery.findUnique({ where: { id: replay } })).not.toBeNull()
  })

  it('a closed delivery (10:10) replayed under a new id after a reopened one (10:20) leaves the pull request open', async () => {
    const { repository, taskId } = await linkedTask()
    const closed = pullRequest(repository, '10:10:00', { state: 'closed' }, 'closed')
    await deliver(opened(repository, '10:00:00'))
    await deliver(closed)
    expect((await deliver(pullRequest(repository, '10:20:00', { title: 'Fix login, again' }, 'reopened'))).body).toEqual({ applied: 1 })
    const before = { row: await observation(repository), summary: await summary(taskId) }

    expect((await deliver(closed)).body).toEqual({ applied: 0, stale: 1 })
    expect(await observation(repository)).toEqual(before.row)
    expect(before.row).toMatchObject({ state: 'OPEN', title: 'Fix login, again' })
    expect((await summary(taskId)).revision).toBe(before.summary.revision)
  })

  it('a check run completion (11:00, failure) arriving after a newer one (11:30, success) does not replace it', async () => {
    const { repository, taskId } = await linkedTask()
    await deliver(opened(repository, '10:00:00'))
    expect((await deliver(checkRun(repository, 'success', '11:30:00'))).body).toEqual({ applied: 1 })
    const before = await summary(taskId)
    expect(before.pullRequest?.aggregateState).toBe('PASSING')

    expect((await deliver(checkRun(repository, 'failure', '11:00:00'))).body).toEqual({ applied: 0, stale: 1 })
    expect((await observation(repository)).checks).toBe('SUCCESS')
    expect((await summary(taskId)).revision).toBe(before.revision)
  })

  it('a review approved (12:00) arriving after changes were requested (12:10) does not replace that decision', async () => {
    const { repository } = await linkedTask()
    await deliver(opened(repository, '10:00:00'))
    await deliver(review(repository, 'changes_requested', '12:10:00'))
    // Its pull request part is no newer either (09:00 against 10:00): the whole delivery is stale.
    expect((await deliver(review(repository, 'approved', '12:00:00'))).body).toEqual({ applied: 0, stale: 1 })
    expect((await observation(repository)).reviewDecision).toBe('CHANGES_REQUESTED')
  })

  it('an in-order sequence applies step by step, deliveries with the same updated_at included', async () => {
    const { repository, taskId } = await linkedTask()
    const steps: [Delivery, (row: Awaited<ReturnType<typeof observation>>) => unknown][] = [
      [opened(repository, '10:00:00'), (row) => expect(row).toMatchObject({ state: 'OPEN', checks: 'NONE' })],
      [checkRun(repository, 'failure', '10:10:00'), (row) => expect(row.checks).toBe('FAILURE')],
      [checkRun(repository, 'success', '10:20:00'), (row) => expect(row.checks).toBe('SUCCESS')],
      [review(repository, 'approved', '10:30:00'), (row) => expect(row.reviewDecision).toBe('APPROVED')],
      // GitHub stamps in whole seconds: a closing and the events around it share one updated_at.
      [pullRequest(repository, '10:40:00', { state: 'closed' }, 'closed'), (row) => expect(row.state).toBe('CLOSED')],
      [pullRequest(repository, '10:40:00', {}, 'reopened'), (row) => expect(row.state).toBe('OPEN')],
      [pullRequest(repository, '10:40:00', { state: 'closed' }, 'closed'), (row) => expect(row.state).toBe('CLOSED')],
      [closedMerged(repository, '10:40:00'), (row) => expect(row.state).toBe('MERGED')],
      [pullRequest(repository, '10:50:00', { state: 'closed', merged: true, title: 'Fix login (edited)' }, 'edited'), (row) => expect(row.title).toBe('Fix login (edited)')],
    ]
    for (const [delivery, expectation] of steps) {
      expect((await deliver(delivery)).body).toEqual({ applied: 1 })
      expectation(await observation(repository))
    }
    expect((await summary(taskId)).pullRequest).toMatchObject({ aggregateState: 'MERGED' })
  })

  it('an open state stamped in the same second as the merge, arriving after it, does not unmerge (GitHub never unmerges)', async () => {
    const { repository } = await linkedTask()
    await deliver(closedMerged(repository, '10:40:00'))
    expect((await deliver(pullRequest(repository, '10:40:00', {}, 'synchronize'))).body).toEqual({ applied: 0, stale: 1 })
    expect((await observation(repository)).state).toBe('MERGED')
  })
})
