// A delivery the server failed to apply is applied when GitHub redelivers it (same
// X-GitHub-Delivery). The id used to be recorded as processed before applying, so the
// redelivery was answered `duplicate` and the pull request's change was lost.
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { sign } from '../../src/github/signature.ts'
import { CreateTaskDocument, CreateWorkspaceDocument, LinkGitHubRepositoryDocument } from '../generated/graphql.ts'

const SECRET = 'redelivery-secret'
const REPOSITORY = 'acme/redelivered'

describe('a webhook delivery that failed is applied on redelivery (postgres)', () => {
  let server: TestServer
  let admin: pg.Client

  beforeAll(async () => {
    server = await startTestServer('postgres', { env: { GITHUB_WEBHOOK_SECRET: SECRET } })
    admin = new pg.Client({ connectionString: server.databaseUrl })
    await admin.connect()
  })
  afterAll(async () => {
    await admin?.end()
    await server?.close()
  })

  async function deliver(delivery: string) {
    const raw = JSON.stringify({
      action: 'opened',
      repository: { full_name: REPOSITORY },
      pull_request: { number: 3, html_url: `https://github.com/${REPOSITORY}/pull/3`, title: 'T', state: 'open', merged: false, draft: false, mergeable_state: 'clean', head: { ref: 'feature' } },
    })
    const response = await fetch(`${server.url}/webhooks/github`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': delivery, 'x-hub-signature-256': sign(SECRET, raw) },
      body: raw,
    })
    return { status: response.status, body: await response.text() }
  }

  it('the first attempt fails while storing the pull request; the redelivery stores it', async () => {
    const workspaceId = (await ok(server.graphqlUrl, server.adminToken, CreateWorkspaceDocument, { name: 'gh' })).createWorkspace.id
    await ok(server.graphqlUrl, server.adminToken, LinkGitHubRepositoryDocument, { workspaceId, repository: REPOSITORY })
    const taskId = (
      await ok(server.graphqlUrl, server.adminToken, CreateTaskDocument, { input: { workspaceId, title: 't', repositories: [{ name: REPOSITORY, branch: 'feature' }] } })
    ).createTask.id
    // The database refuses the pull-request write (as a failure after the delivery was accepted would).
    await admin.query(`CREATE FUNCTION refuse_pull_request() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$ LANGUAGE plpgsql`)
    await admin.query(`CREATE TRIGGER refuse_pull_request BEFORE INSERT OR UPDATE ON "PullRequestObservation" FOR EACH ROW EXECUTE FUNCTION refuse_pull_request()`)
    const delivery = randomUUID()
    try {
      expect((await deliver(delivery)).status).toBe(500)
    } finally {
      await admin.query('DROP TRIGGER refuse_pull_request ON "PullRequestObservation"')
    }
    expect(await server.store.db.pullRequestObservation.count({ where: { workspaceId } })).toBe(0)

    const redelivered = await deliver(delivery)
    expect(redelivered).toEqual({ status: 200, body: JSON.stringify({ applied: 1 }) })
    expect(await server.store.db.pullRequestObservation.findMany({ where: { workspaceId }, select: { number: true, taskId: true } })).toEqual([{ number: 3, taskId }])
    // And now it is a duplicate.
    expect((await deliver(delivery)).body).toBe(JSON.stringify({ duplicate: true }))
  })
})
