import { createYoga } from 'graphql-yoga'
import { getSchema } from '../schema/schema.ts'
import { buildContext, type Context, type ContextServices } from '../schema/context.ts'
import { bearerToken } from '../auth/tokens.ts'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { WebSocketOperationContext } from '../delivery/operation-pipeline.ts'
import { graphiqlAssetsPlugin, graphiqlOptions, renderOfflineGraphiQL } from './graphiql.ts'
import type { DatabaseHealth } from './database-health.ts'
import { OPERATION_LIMITS } from '../contract/operation-limits.ts'
import { databaseAwareMaskError } from '../contract/client-errors.ts'
import { errorCounter } from '../observability/graphql-metrics.ts'
import { operationLimitPlugins } from './plugins/use-operation-limits.ts'
import { rateLimitPlugin, type RateLimits } from './plugins/use-rate-limits.ts'
import { errorCodesPlugin } from './plugins/use-error-codes.ts'
import { useAccessEnforcement } from './plugins/use-access-enforcement.ts'
import { jitQueries } from './plugins/use-jit-queries.ts'
import { stringInputPlugin } from './plugins/use-string-input.ts'
import { graphqlMetricsPlugin } from './plugins/use-graphql-metrics.ts'
import { accessLogPlugin } from './plugins/use-access-log.ts'
import { tracingPlugin } from './plugins/use-tracing.ts'
import { tracing } from '../observability/tracing.ts'

/** What the WebSocket layer hands to the context factory for one operation. */

export function createYogaServer(services: ContextServices & { metrics: Metrics; logger: Logger; rateLimits?: RateLimits; database?: DatabaseHealth }) {
  const { logger, metrics } = services
  const schema = getSchema()
  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: graphiqlOptions,
    renderGraphiQL: renderOfflineGraphiQL,
    landingPage: false,
    // CORS is decided once for every route before Yoga (cors.ts); Yoga's default allows every origin with credentials.
    cors: false,
    // Never an originalError or stack in a response, whatever NODE_ENV says (Yoga's dev mode adds them).
    // A database that cannot serve (saturated, unreachable, refusing writes) is UNAVAILABLE (503 +
    // Retry-After); an unreachable one, or refused writes, also turn /readyz 503.
    maskedErrors: {
      isDev: false,
      maskError: databaseAwareMaskError({
        onUnreachable: () => services.database?.markUnreachable(),
        onWritesRefused: () => services.database?.markWritesRefused(),
      }),
    },
    maxRequestBodySize: OPERATION_LIMITS.maxRequestBodyBytes,
    logging: {
      debug: (...args) => logger.debug({ args: args.map(String) }, 'yoga'),
      info: (...args) => logger.info({ args: args.map(String) }, 'yoga'),
      warn: (...args) => logger.warn({ args: args.map(String) }, 'yoga'),
      error: (...args) => logger.error({ err: args.find((a) => a instanceof Error) }, 'yoga error'),
    },
    context: async (initial): Promise<Context> => {
      const ws = initial.websocket as WebSocketOperationContext | undefined
      if (ws) return { ...buildContext(services, ws.principal, ws.connection), onWorkspaceScope: ws.onWorkspaceScope }
      const request = initial.request as Request
      // Every HTTP request reads the token's current state: a revoked token fails its very next request.
      const principal = await services.access.principal(bearerToken(request.headers.get('authorization')), { fresh: true })
      return buildContext(services, principal)
    },
    plugins: [
      // First, so operations a later plugin refuses are timed too.
      graphqlMetricsPlugin(metrics, schema),
      // Only with tracing on (started before the server is built): off, no hook of it runs.
      ...(tracing.on ? [tracingPlugin()] : []),
      errorCodesPlugin(errorCounter(metrics)),
      ...operationLimitPlugins(),
      // Before the rate limits: input refused as unstorable takes nothing from the caller's budget.
      stringInputPlugin(),
      ...(services.rateLimits ? [rateLimitPlugin(services.rateLimits)] : []),
      graphiqlAssetsPlugin(),
      useAccessEnforcement(),
      // The operation has passed every check above before it is compiled.
      jitQueries(),
      // Last: reads the errors as they leave, after every plugin above has mapped them.
      accessLogPlugin(),
    ],
  })
}

export type YogaServer = ReturnType<typeof createYogaServer>
