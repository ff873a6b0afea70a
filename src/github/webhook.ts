import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from '../observability/logger.ts'
import type { Store } from '../store/store.ts'
import { workspacesLinkedTo } from '../store/github-links.ts'
import { recordWebhookDelivery, webhookDeliverySeen } from '../store/webhook-deliveries.ts'
import { applyPullRequestChange } from './apply.ts'
import { MalformedPayload, pullRequestDelivery } from './events.ts'
import { readSignedBody, type BodyLimits } from './read-body.ts'

export interface WebhookDeps extends BodyLimits {
  secret: string | undefined
  store: Store
  logger: Logger
}

function reply(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
}

/**
 * POST /webhooks/github. The body is read streamed within a per-body limit (413) and a budget of
 * unverified bytes shared by all requests (503 with Retry-After when it has no room), and its
 * signature is checked as soon as it is complete, before anything is parsed; a bad signature
 * (401), a malformed body (400) or a missing secret (503) stores nothing. Deliveries are
 * de-duplicated by X-GitHub-Delivery once applied; events other than pull_request, pull_request_review,
 * check_suite and check_run are acknowledged with 202 and ignored. A delivery reaches only the
 * workspaces that link its repository; for a repository no workspace links it is acknowledged
 * with 202 and stored nowhere, not even as a processed delivery id. A delivery older than what is
 * stored for its pull request changes nothing and is still answered 200 (with `stale`), so GitHub
 * does not send it again.
 */
export async function handleGithubWebhook(req: IncomingMessage, res: ServerResponse, deps: WebhookDeps): Promise<void> {
  if (req.method !== 'POST') return reply(res, 405, { error: 'POST only' })
  // Nothing to verify against: refused before a byte of the body is held.
  if (!deps.secret) {
    req.resume()
    return reply(res, 503, { error: 'GITHUB_WEBHOOK_SECRET is not configured; deliveries are refused' })
  }
  const read = await readSignedBody(req, deps.secret, req.headers['x-hub-signature-256'] as string | undefined, deps)
  switch (read.kind) {
    case 'aborted':
      return
    case 'too-large':
      return reply(res, 413, { error: 'payload too large', limitBytes: deps.maxBodyBytes })
    case 'busy':
      deps.logger.warn({ action: 'github.webhook', inUseBytes: deps.budget.inUse }, 'webhook refused: unverified body budget full')
      return reply(res, 503, { error: 'too many webhook bodies in flight; retry later' }, { 'retry-after': '1' })
    case 'bad-signature':
      return reply(res, 401, { error: 'invalid signature' })
  }
  const event = String(req.headers['x-github-event'] ?? '')
  const delivery = String(req.headers['x-github-delivery'] ?? '')
  let payload: Record<string, unknown>
  try {
    payload = JSON.parse(read.body.toString('utf8')) as Record<string, unknown>
    if (!payload || typeof payload !== 'object' || Array.isArray(payload)) throw new MalformedPayload('not an object')
  } catch {
    return reply(res, 400, { error: 'malformed JSON body' })
  }
  let described
  try {
    described = pullRequestDelivery(event, payload)
  } catch (error) {
    if (error instanceof MalformedPayload) return reply(res, 400, { error: error.message })
    throw error
  }
  if (!described) return reply(res, 202, { ignored: event || '(no event)' })
  if (!delivery) return reply(res, 400, { error: 'X-GitHub-Delivery missing' })
  const workspaceIds = await workspacesLinkedTo(deps.store, described.repository)
  if (workspaceIds.length === 0) return reply(res, 202, { unlinked: true })
  if (await webhookDeliverySeen(deps.store, delivery)) return reply(res, 200, { duplicate: true })
  // A change is stale when every linked workspace had something newer for it.
  let stale = 0
  for (const change of described.changes) {
    let staleEverywhere = true
    for (const workspaceId of workspaceIds) staleEverywhere = (await applyPullRequestChange(deps.store, workspaceId, change)) === 'stale' && staleEverywhere
    if (staleEverywhere) stale++
  }
  // Recorded once applied: a delivery that failed part-way is applied in full when it is redelivered
  // (a change merged twice leaves the observation as once), instead of being dropped as a duplicate.
  // A stale one is recorded too: applying it again would change nothing either.
  await recordWebhookDelivery(deps.store, delivery, event)
  deps.logger.info(
    { event, delivery, pullRequests: described.changes.length, workspaces: workspaceIds.length, stale, action: 'github.webhook' },
    'webhook applied',
  )
  reply(res, 200, { applied: described.changes.length - stale, ...(stale > 0 && { stale }) })
}
