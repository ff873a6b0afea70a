import { randomUUID } from 'node:crypto'
import type { Server as HttpServer } from 'node:http'
import { WebSocketServer } from 'ws'
import { useServer } from 'graphql-ws/use/ws'
import { GraphQLError, type ExecutionArgs } from 'graphql'
import { bearerToken } from '../auth/tokens.ts'
import { principalForToken, type Principal } from '../store/users.ts'
import type { Store } from '../store/store.ts'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { WebSocketOperationContext, YogaServer } from './yoga.ts'

interface ConnectionState {
  connectionId: string
  principal: Principal
}

type Enveloped = ReturnType<YogaServer['getEnveloped']>

/**
 * graphql-ws on the same /graphql path. The connection_init payload carries
 * `{ authorization: "Bearer <token>" }`; a missing or unknown token closes the socket with
 * graphql-ws's 4403 Forbidden. Each operation runs through Yoga's envelop pipeline, so the depth
 * limit, context and metrics are the same as over HTTP.
 */
export function attachWebSocketServer(options: {
  httpServer: HttpServer
  yoga: YogaServer
  store: Store
  logger: Logger
  metrics: Metrics
}) {
  const { yoga, store, logger, metrics } = options
  const wss = new WebSocketServer({ server: options.httpServer, path: yoga.graphqlEndpoint })
  const states = new WeakMap<object, ConnectionState>()

  const disposable = useServer(
    {
      execute: (args: ExecutionArgs) => (args.rootValue as Enveloped).execute(args),
      subscribe: (args: ExecutionArgs) => (args.rootValue as Enveloped).subscribe(args),
      onConnect: async (ctx) => {
        const header = ctx.connectionParams?.authorization
        const token = bearerToken(typeof header === 'string' ? header : undefined)
        const principal = token ? await principalForToken(store.db, token) : null
        if (!principal) {
          logger.info({ action: 'ws.reject', reason: token ? 'unknown token' : 'no token' }, 'websocket refused')
          return false
        }
        const state = { connectionId: randomUUID(), principal }
        states.set(ctx.extra.socket, state)
        metrics.websocketConnections.inc()
        logger.debug({ action: 'ws.connect', connectionId: state.connectionId }, 'websocket connected')
        return true
      },
      onSubscribe: async (ctx, _id, payload) => {
        const state = states.get(ctx.extra.socket)!
        const websocket: WebSocketOperationContext = { principal: state.principal, connectionId: state.connectionId }
        const enveloped = yoga.getEnveloped({ ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params: payload, websocket })
        let document
        try {
          document = enveloped.parse(payload.query)
        } catch (error) {
          // A throw here would close the whole socket (4500); a syntax error is the operation's own failure.
          if (error instanceof GraphQLError)
            return [new GraphQLError(error.message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })]
          throw error
        }
        const errors = enveloped.validate(enveloped.schema, document)
        if (errors.length > 0) return errors
        return {
          schema: enveloped.schema,
          operationName: payload.operationName,
          document,
          variableValues: payload.variables,
          contextValue: await enveloped.contextFactory(),
          rootValue: enveloped,
        }
      },
      onClose: (ctx) => {
        const state = states.get(ctx.extra.socket)
        if (state) logger.debug({ action: 'ws.close', connectionId: state.connectionId }, 'websocket closed')
      },
    },
    wss,
  )

  return {
    async close() {
      await disposable.dispose()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
    },
  }
}
