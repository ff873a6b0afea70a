import type { Server as HttpServer } from 'node:http'
import { WebSocketServer, type WebSocket } from 'ws'
import { CloseCode, makeServer } from 'graphql-ws'
import { getOperationAST, GraphQLError, type ExecutionArgs, type ExecutionResult } from 'graphql'
import type { AccessControl } from '../access/access-control.ts'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { OperationPipeline } from './operation-pipeline.ts'
import { OPERATION_LIMITS } from '../contract/operation-limits.ts'
import { socketErrors, socketResult } from '../contract/client-errors.ts'
import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import { PeriodicSweep } from '../util/periodic-sweep.ts'
import { DEFAULT_LIMITS, type SchedulerLimits } from '../outbound/outbound-scheduler.ts'
import { authenticateSocket } from './gateway-auth.ts'
import { GatewayCohorts } from './gateway-cohorts.ts'
import { DETACHED } from './detached-members.ts'
import { Connection, serveGraphqlWs, type ConnectionServices } from './gateway-connection.ts'
import { gatewayMetrics } from './gateway-metrics.ts'
import { startOperation, takeRoot } from './operation-start.ts'

const GRAPHQL_TRANSPORT_WS = 'graphql-transport-ws'
/** A client that has not answered a ping by the next one is dropped: after 12 to 24 s of silence. */
const KEEPALIVE_MS = 12_000

export interface DeliveryGatewayOptions {
  httpServer: HttpServer
  yoga: OperationPipeline
  access: AccessControl
  logger: Logger
  metrics: Metrics
  limits?: SchedulerLimits
  /** Active subscriptions one connection may hold (README "Limits"; default 100). */
  maxSubscriptionsPerConnection?: number
  /** Share one execution per event among subscribers of the same feed operation (default on). */
  multiplex?: boolean
  onConnectionClosed?: (connectionId: string) => void
  /** False while the server must not serve (startup recovery, shutdown): the handshake gets 503. */
  acceptingConnections?: () => boolean
  /** Ping interval (a silent client is dropped after one to two of them) and its timers; tests inject both. */
  keepalive?: { intervalMs?: number; timers?: Scheduler }
  /** graphql-ws closes a socket with 4408 when connection_init does not come within this (its default 3 s). */
  connectionInitWaitTimeoutMs?: number
}

/**
 * The delivery gateway: graphql-ws (makeServer) over `ws` on /graphql, with an outbound
 * scheduler per connection. Results of queries and mutations are control frames; subscription
 * results go as their resolver tagged them (delivery-tags.ts): semantic, or replaceable.
 * Authentication comes from the connection_init payload; an unknown or missing token closes with 4403.
 */
export function attachDeliveryGateway(options: DeliveryGatewayOptions) {
  const { yoga, logger } = options
  const connections = new Map<WebSocket, Connection>()
  const observe = gatewayMetrics(options.metrics, logger, () => [...connections.values()].map((c) => c.scheduler))
  const shapeErrors = (errors: readonly GraphQLError[], client?: string, operation?: string) => {
    for (const error of errors)
      if (error.originalError && !(error.originalError instanceof GraphQLError)) logger.error({ err: error.originalError, client, operation }, 'graphql-ws operation failed')
    return socketErrors(errors, observe.countError)
  }
  /** An operation ended (graphql-ws's, or a member the gateway runs): its metrics and its access holds go. */
  const operationEnded = (connection: Connection, id: string) => {
    observe.subscriptionEnded(connection.socket, id)
    connection.access.ended(id)
  }
  const cohorts = new GatewayCohorts(logger, observe.countError, options.multiplex !== false, { errorPayload: (errors) => shapeErrors(errors), ended: operationEnded })
  const timers = options.keepalive?.timers ?? realScheduler
  const keepaliveMs = options.keepalive?.intervalMs ?? KEEPALIVE_MS
  // One timer pings every connection in turn (each about once an interval), not a timer per connection.
  const keepalives = new PeriodicSweep<Connection>(keepaliveMs, (connection) => connection.keepalive(), timers, (error) =>
    logger.error({ err: error, action: 'ws.keepalive' }, 'a keepalive ping failed'),
  )
  const wss = new WebSocketServer({
    server: options.httpServer,
    path: yoga.graphqlEndpoint,
    // The HTTP body bound; a bigger frame closes the socket with 1009 (ws) before it is buffered whole.
    maxPayload: OPERATION_LIMITS.maxRequestBodyBytes,
    handleProtocols: (protocols) => (protocols.has(GRAPHQL_TRANSPORT_WS) ? GRAPHQL_TRANSPORT_WS : false),
    verifyClient: (_info, done) =>
      options.acceptingConnections?.() === false ? done(false, 503, 'Service Unavailable', { 'Retry-After': '1' }) : done(true),
  })
  const operations = { yoga, cohorts, maxSubscriptionsPerConnection: options.maxSubscriptionsPerConnection ?? 100 }

  const server = makeServer<Record<string, unknown> | undefined, { socket: WebSocket }>({
    connectionInitWaitTimeout: options.connectionInitWaitTimeoutMs,
    execute: (args: ExecutionArgs) => takeRoot(args).enveloped.execute(args),
    subscribe: (args: ExecutionArgs) => {
      const { enveloped, cohort } = takeRoot(args)
      const subscribe = (a: ExecutionArgs) => enveloped.subscribe(a) as Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult>
      return cohort ? cohorts.subscribe(cohort, args, subscribe) : subscribe(args)
    },
    onConnect: async (ctx) => {
      const connection = connections.get(ctx.extra.socket)
      if (!(await authenticateSocket(ctx, connection))) return false
      options.metrics.websocketConnections.inc()
      logger.debug({ action: 'ws.connect', client: connection!.memberships.id }, 'websocket connected')
      return true
    },
    onSubscribe: (ctx, id, payload) => {
      const connection = connections.get(ctx.extra.socket)!
      // graphql-ws checks its own operations; a member the gateway runs is no longer among them.
      if (connection.members?.has(id)) {
        connection.scheduler.close(CloseCode.SubscriberAlreadyExists, `Subscriber for ${id} already exists`)
        return [new GraphQLError('Subscriber already exists')]
      }
      return startOperation(operations, connection, id, payload)
    },
    onOperation: (ctx, id, _payload, args, result) => {
      // Counted once a stream exists: a start refused or failed (FORBIDDEN, RATE_LIMITED) is an error, not a subscription.
      if (!(Symbol.asyncIterator in result) || getOperationAST(args.document, args.operationName)?.operation !== 'subscription') return
      observe.subscriptionStarted(ctx.extra.socket, id, args)
      connections.get(ctx.extra.socket)?.access.subscribed(id)
      return cohorts.started(args, result, id in ctx.subscriptions)
    },
    // Errors leave in the contract's shape and are counted here, where the frame carrying them is formed.
    onNext: (_ctx, _id, _payload, _args, result) => socketResult(result, observe.countError),
    onError: (ctx, id, _payload, errors) => shapeErrors(errors, connections.get(ctx.extra.socket)?.memberships.id, id),
    onComplete: (ctx, id) => {
      const connection = connections.get(ctx.extra.socket)
      if (!connection) return observe.subscriptionEnded(ctx.extra.socket, id)
      // The stand-in of a member the gateway now runs (detached-members.ts): the operation goes on.
      if (connection.subscriptions.get(id) === DETACHED) return
      operationEnded(connection, id)
      // Still listed by graphql-ws means a complete frame follows, and routeFrame() releases the entry once
      // it is queued behind the subscription's results; otherwise (the client completed, the operation
      // failed, the socket closed) no frame follows and this is the last chance.
      if (!(id in ctx.subscriptions)) connection.subscriptions.delete(id)
    },
  })

  // One for every connection: each holds a reference, not a copy.
  const services: ConnectionServices = { access: options.access, limits: options.limits ?? DEFAULT_LIMITS, logger, observe, timers, keepaliveMs, released }
  wss.on('connection', (socket, request) => {
    const connection = new Connection(socket, services, request.socket.remoteAddress)
    connections.set(socket, connection)
    keepalives.add(connection)
    serveGraphqlWs(server, connection)
  })

  /** The socket closed: what the gateway held for it goes (graphql-ws then ends its operations). */
  function released(connection: Connection, code: number, reason: string): void {
    keepalives.delete(connection)
    connections.delete(connection.socket)
    connection.access.closed()
    for (const member of connection.members?.values() ?? []) member.closed()
    connection.members?.clear()
    observe.socketClosed(connection.socket)
    connection.scheduler.close(code, reason) // drops whatever was still queued for the gone socket
    options.onConnectionClosed?.(connection.memberships.id)
  }

  return {
    connections: () => [...connections.values()],
    cohorts: cohorts.cohorts,
    /** How many entries the gateway holds, per table (tests prove every path frees what it took). */
    tableSizes() {
      const sizes = { connections: connections.size, subscriptions: 0, detached: 0, memberships: 0, schedulerSessions: 0, cohorts: cohorts.cohorts.size }
      for (const c of connections.values()) {
        sizes.subscriptions += c.subscriptions.size
        sizes.detached += c.members?.size ?? 0
        sizes.memberships += c.memberships.sessions.length
        sizes.schedulerSessions += c.scheduler.trackedSessions
      }
      return sizes
    },
    sockets: () => [...connections.keys()],
    async close() {
      keepalives.clear()
      for (const socket of wss.clients) {
        connections.get(socket)?.closedByServer(1001)
        socket.close(1001, 'Going away')
      }
      await new Promise<void>((resolve) => wss.close(() => resolve()))
    },
  }
}
