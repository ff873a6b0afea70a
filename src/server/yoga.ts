import { createYoga, type Plugin } from 'graphql-yoga'
import { GraphQLError, Kind, type OperationDefinitionNode } from 'graphql'
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth'
import { getSchema } from '../schema/schema.ts'
import { buildContext, type Context, type ContextServices } from '../schema/context.ts'
import { bearerToken } from '../auth/tokens.ts'
import { principalForToken, type Principal } from '../store/users.ts'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { ConnectionScope } from '../delivery/connection.ts'
import { graphiqlAssetsPlugin, graphiqlOptions, renderOfflineGraphiQL } from './graphiql.ts'

export const MAX_QUERY_DEPTH = 12

/** What the WebSocket layer hands to the context factory for one operation. */
export interface WebSocketOperationContext {
  principal: Principal | null
  connection: ConnectionScope
}

/** Latency per operation type and transport, and error counts by extensions.code. */
function metricsPlugin(metrics: Metrics): Plugin<Context & { transport?: string }> {
  return {
    onExecute({ args }) {
      const started = performance.now()
      const operation =
        (args.document.definitions as readonly { kind: string }[]).find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
          ?.operation ?? 'unknown'
      const transport = args.contextValue.connectionId ? 'ws' : 'http'
      return {
        onExecuteDone({ result }) {
          metrics.requestDuration.observe({ transport, operation }, (performance.now() - started) / 1000)
          if ('errors' in result && result.errors)
            for (const error of result.errors)
              metrics.graphqlErrors.inc({ code: String(error.extensions?.code ?? 'INTERNAL_SERVER_ERROR') })
        },
      }
    },
  }
}

export function createYogaServer(services: ContextServices & { metrics: Metrics; logger: Logger }) {
  const { logger, metrics } = services
  return createYoga<Record<string, unknown>, Context>({
    schema: getSchema(),
    graphqlEndpoint: '/graphql',
    graphiql: graphiqlOptions,
    renderGraphiQL: renderOfflineGraphiQL,
    landingPage: false,
    logging: {
      debug: (...args) => logger.debug({ args: args.map(String) }, 'yoga'),
      info: (...args) => logger.info({ args: args.map(String) }, 'yoga'),
      warn: (...args) => logger.warn({ args: args.map(String) }, 'yoga'),
      error: (...args) => logger.error({ err: args.find((a) => a instanceof Error) }, 'yoga error'),
    },
    context: async (initial): Promise<Context> => {
      const ws = initial.websocket as WebSocketOperationContext | undefined
      if (ws) return buildContext(services, ws.principal, ws.connection)
      const request = initial.request as Request
      const token = bearerToken(request.headers.get('authorization'))
      const principal = token ? await principalForToken(services.store.db, token) : null
      return buildContext(services, principal)
    },
    plugins: [
      maxDepthPlugin({
        n: MAX_QUERY_DEPTH,
        propagateOnRejection: false,
        // graphql-armor's own error has no extensions.code; the contract promises BAD_USER_INPUT.
        onReject: [
          (ctx, error) =>
            ctx?.reportError(new GraphQLError(error.message, { extensions: { code: 'BAD_USER_INPUT' } })),
        ],
      }),
      metricsPlugin(metrics),
      graphiqlAssetsPlugin(),
    ],
  })
}

export type YogaServer = ReturnType<typeof createYogaServer>
