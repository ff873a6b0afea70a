import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Registry } from 'prom-client'
import type { Readiness } from './readiness.ts'
import { handleGithubWebhook, type WebhookDeps } from '../github/webhook.ts'

/** Operational endpoints beside /graphql. Returns false when the request is not one of them. */
export async function handleOperationalRoute(
  req: IncomingMessage,
  res: ServerResponse,
  deps: { readiness: Readiness; registry: Registry; webhook: WebhookDeps },
): Promise<boolean> {
  const path = (req.url ?? '/').split('?', 1)[0]
  switch (path) {
    case '/healthz':
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
      return true
    case '/readyz': {
      const ready = deps.readiness.ready
      res
        .writeHead(ready ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify(ready ? { status: 'ready' } : { status: 'starting', waitingFor: deps.readiness.waitingFor }))
      return true
    }
    case '/webhooks/github':
      await handleGithubWebhook(req, res, deps.webhook)
      return true
    case '/metrics':
      res.writeHead(200, { 'content-type': deps.registry.contentType }).end(await deps.registry.metrics())
      return true
    default:
      return false
  }
}
