import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Registry } from 'prom-client'
import type { Readiness } from './readiness.ts'
import type { DatabaseHealth } from './database-health.ts'
import { handleGithubWebhook, type WebhookDeps } from '../github/webhook.ts'

/** Operational endpoints beside /graphql. Returns false when the request is not one of them. */
export async function handleOperationalRoute(
  req: IncomingMessage,
  res: ServerResponse,
  deps: { readiness: Readiness; database?: DatabaseHealth; registry: Registry; webhook: WebhookDeps },
): Promise<boolean> {
  const path = (req.url ?? '/').split('?', 1)[0]
  switch (path) {
    case '/healthz':
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
      return true
    case '/readyz': {
      // Not ready before startup recovery (or while stopping) whatever the database says; once
      // ready, only while the database can be reached and takes writes (probed at most once a second).
      const ready = deps.readiness.ready
      const reachable = ready && (deps.database ? await deps.database.check() : true)
      const body = ready
        ? reachable
          ? { status: 'ready' }
          : { status: 'unavailable', waitingFor: deps.database?.waitingFor ?? ['database'] }
        : { status: 'starting', waitingFor: deps.readiness.waitingFor }
      res
        .writeHead(reachable ? 200 : 503, { 'content-type': 'application/json', ...(!reachable && { 'retry-after': '1' }) })
        .end(JSON.stringify(body))
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
