import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from '../observability/logger.ts'
import type { Store } from '../store/store.ts'
import { workspacesLinkedTo } from '../store/github-links.ts'
import { recordWebhookDelivery, webhookDeliverySeen } from '../store/pull-requests.ts'
import { applyPullRequestChange } from './apply.ts'
import { MalformedPayload, pullRequestDelivery } from './events.ts'
import { validSignature } from './signature.ts'

const MAX_BODY = 5 * 1024 * 1024

function reply(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY) return undefined
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/**
 * POST /webhooks/github. The signature is checked before anything is parsed; a bad signature
 * (401), a malformed body (400) or a missing secret (503) stores nothing. Deliveries are
 * de-duplicated by X-GitHub-Delivery once applied; events other than pull_request, pull_request_review,
 * check_suite and check_run are acknowledged with 202 and ignored. A delivery reaches only the
 * workspaces that link its repository; for a repository no workspace links it is acknowledged
 * with 202 and stored nowhere, not even as a processed delivery id.
 */
export async function handleGithubWebhook(
  req: IncomingMessage,
  res: ServerResponse,
  deps: { secret: string | undefined; store: Store; logger: Logger },
): Promise<void> {
  if (req.method !== 'POST') return reply(res, 405, { error: 'POST only' })
  const body = await readBody(req)
  if (!body) return reply(res, 413, { error: 'payload too large' })
  if (!deps.secret) return reply(res, 503, { error: 'GITHUB_WEBHOOK_SECRET is not configured; deliveries are refused' })
  if (!validSignature(deps.secret, body, req.headers['x-hub-signature-256'] as string | undefined))
    return reply(res, 401, { error: 'invalid signature' })
  const event = String(req.headers['x-github-event'] ?? '')
  const delivery = String(req.headers['x-github-delivery'] ?? '')
  let payload: Record<string, unknown>
  try {
    payload = JSON.parse(body.toString('utf8')) as Record<string, unknown>
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
  for (const workspaceId of workspaceIds)
    for (const change of described.changes) await applyPullRequestChange(deps.store, workspaceId, change)
  // Recorded once applied: a delivery that failed part-way is applied in full when it is redelivered
  // (a change merged twice leaves the observation as once), instead of being dropped as a duplicate.
  await recordWebhookDelivery(deps.store, delivery, event)
  deps.logger.info(
    { event, delivery, pullRequests: described.changes.length, workspaces: workspaceIds.length, action: 'github.webhook' },
    'webhook applied',
  )
  reply(res, 200, { applied: described.changes.length })
}
