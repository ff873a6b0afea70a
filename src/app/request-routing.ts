import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import { isDatabaseRefusingWrites, isDatabaseUnavailable, isDatabaseUnreachable } from '../store/db.ts'
import type { Store } from '../store/store.ts'
import type { Config } from '../config/config.ts'
import { ByteBudget } from '../github/body-budget.ts'
import { handleOperationalRoute } from '../server/http-routes.ts'
import { handleWebPage } from '../server/web-page.ts'
import type { Readiness } from '../server/readiness.ts'
import type { DatabaseHealth } from '../server/database-health.ts'
import type { YogaServer } from '../server/yoga.ts'

/**
 * Until startup recovery has finished (and again while shutting down) GraphQL answers 503 with a
 * Retry-After: what it would serve is pre-recovery state a client must not take as current.
 */
export function refuseUntilReady(res: ServerResponse): void {
  const body = {
    errors: [{ message: 'The server is starting or stopping; retry shortly.', extensions: { code: 'UNAVAILABLE' } }],
  }
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify(body))
}

/** While the server is being assembled: /healthz answers (liveness), every other request is refused as not ready. */
export const healthOnly: RequestListener = (req, res) =>
  (req.url ?? '').split('?', 1)[0] === '/healthz'
    ? void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
    : refuseUntilReady(res)

/** Every request once the server is assembled: operational routes, the page, then GraphQL (once ready). */
export function routeRequests(deps: {
  config: Config
  store: Store
  logger: Logger
  metrics: Metrics
  readiness: Readiness
  database: DatabaseHealth
  yoga: YogaServer
  webRoot?: string
}): (req: IncomingMessage, res: ServerResponse) => void {
  const { config, store, logger, metrics, readiness, database, yoga } = deps
  // One budget for every webhook request this process serves (README "Git and GitHub").
  const webhookBudget = new ByteBudget(config.githubWebhookLimits.unverifiedBytes)
  return (req, res) => {
    handleOperationalRoute(req, res, {
      readiness,
      database,
      registry: metrics.registry,
      webhook: { secret: config.githubWebhookSecret, store, logger, maxBodyBytes: config.githubWebhookLimits.maxBodyBytes, budget: webhookBudget },
    })
      .then(async (handled) => {
        // The page loads before readiness; its client retries the GraphQL calls answered UNAVAILABLE.
        if (handled || (await handleWebPage(req, res, deps.webRoot))) return
        if (!readiness.ready) {
          metrics.graphqlErrors.inc({ code: 'UNAVAILABLE' })
          return refuseUntilReady(res)
        }
        return yoga.handle(req, res)
      })
      .catch((error: unknown) => {
        logger.error({ err: error, path: req.url }, 'request failed')
        if (res.headersSent) return
        // A webhook the database was too busy for, or could not be reached for: the sender may redeliver it (nothing was recorded as processed).
        if (isDatabaseUnreachable(error)) database.markUnreachable()
        else if (isDatabaseRefusingWrites(error)) database.markWritesRefused()
        if (isDatabaseUnavailable(error)) res.writeHead(503, { 'retry-after': '1' }).end()
        else res.writeHead(500).end()
      })
  }
}
