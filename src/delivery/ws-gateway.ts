import { randomUUID } from 'node:crypto'
import type { Server as HttpServer } from 'node:http'
import { WebSocketServer, type WebSocket } from 'ws'
import { makeServer, CloseCode, type Context as SocketContext } from 'graphql-ws'
import { getOperationAST, GraphQLError, Kind, type ExecutionArgs, type ExecutionResult } from 'graphql'
import { bearerToken } from '../auth/tokens.ts'
import type { AccessControl } from '../access/access-control.ts'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { Context } from '../schema/context.ts'
import type { WebSocketOperationContext, YogaServer } from '../server/yoga.ts'
import { ConnectionMemberships } from './connection.ts'
import { ConnectionAccess, REVOKED_DRAIN_MS } from './connection-access.ts'
import { DEFAULT_LIMITS, OutboundScheduler, type SchedulerLimits } from './outbound-scheduler.ts'
import { DeliveryTags } from './delivery-tags.ts'
import { createDeliveryMetrics } from './metrics.ts'
import { closeCodeOfSocketError, KEEPALIVE_CLOSE_CODE, serverCloseRecorder } from './server-closes.ts'
import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import { PeriodicSweep } from '../util/periodic-sweep.ts'
import { Cohorts, feedCohortPlan, joinFeedCohort, MULTIPLEXABLE_FIELDS, type CohortSink, type FeedCohortPlan } from './cohorts.ts'
import { OPERATION_LIMITS } from '../server/operation-limits.ts'
import { socketErrors, socketResult } from '../server/error-codes.ts'
import { forbidden } from '../errors.ts'
import { errorCounter, subscriptionField, subscriptionMetrics } from '../observability/graphql-metrics.ts'

const GRAPHQL_TRANSPORT_WS = 'graphql-transport-ws'
const TEXT_FRAME = Object.freeze({ binary: false })
/** What the routing table keeps for every cohort member once started: its frames carry no delivery tag. */
const COHORT_MEMBER = new DeliveryTags()
/** A client that has not answered a ping by the next one is dropped: after 12 to 24 s of silence. */
const KEEPALIVE_MS = 12_000

interface Connection {
  memberships: ConnectionMemberships
  scheduler: OutboundScheduler
  /** Operation id → how its results are delivered, for subscriptions (results are classified by their tag). */
  subscriptions: Map<string, DeliveryTags>
  /** Logs and counts the close the server decides, once (server-closes.ts). */
  closedByServer: (code: number, detail?: Record<string, unknown>) => void
  /** Why onConnect refused, for the 4403 close line. */
  refusal?: string
  /** graphql-ws's state of this socket: its operations, so a revoked one can be ended from here. */
  socketContext?: SocketContext<Record<string, unknown> | undefined, { socket: WebSocket }>
  /** The caller, each operation authorized against the token's current state, and what revocation ends. */
  access: ConnectionAccess
}

type Enveloped = ReturnType<YogaServer['getEnveloped']>

/** What onSubscribe hands to execute/subscribe: the operation's envelop pipeline and its cohort, if any. */
interface OperationRoot {
  enveloped: Enveloped
  cohort?: FeedCohortPlan & { sink: CohortSink }
}

/**
 * The operation's pipeline and cohort, once: graphql-ws keeps the execution arguments for as long
 * as a subscription lives, and neither is needed after the start (the pipeline's closures and the
 * cohort key, a copy of the whole document, would otherwise stay with every idle subscription).
 */
function takeRoot(args: ExecutionArgs): OperationRoot {
  const root = args.rootValue as OperationRoot
  args.rootValue = undefined
  return root
}

/** graphql-ws writes `{"id":…,"type":…,"payload":…}` in that order; matching the head spares parsing a multi-MB payload per frame. */
const FRAME_HEAD = /^\{"id":("(?:[^"\\]|\\.)*"),"type":"([a-z_]+)"/

export function frameHeader(data: string): { type: string; id?: string } {
  const head = FRAME_HEAD.exec(data)
  if (head) return { id: JSON.parse(head[1]!) as string, type: head[2]! }
  return JSON.parse(data) as { type: string; id?: string }
}

/**
 * The delivery gateway: graphql-ws (makeServer) over `ws` on /graphql, with an outbound
 * scheduler per connection. Results of queries and mutations are control frames; subscription
 * results are semantic, except MessageUpdated (replaceable). Authentication comes from the
 * connection_init payload; an unknown or missing token closes with 4403.
 */
export function attachDeliveryGateway(options: {
  httpServer: HttpServer
  yoga: YogaServer
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
}) {
  const { yoga, access, logger, metrics } = options
  const limits = options.limits ?? DEFAULT_LIMITS
  const connections = new Map<WebSocket, Connection>()
  const cohorts = new Cohorts(logger)
  const delivery = createDeliveryMetrics(metrics.registry, () => [...connections.values()].map((c) => c.scheduler))
  const countError = errorCounter(metrics)
  const subscriptionStats = subscriptionMetrics(metrics)
  const closeRecorder = serverCloseRecorder(delivery.serverCloses, logger)
  /** Execution arguments of cohort members not yet started (onOperation lets go of their contexts). */
  const cohortMembers = new WeakSet<ExecutionArgs>()
  const timers = options.keepalive?.timers ?? realScheduler
  const keepaliveMs = options.keepalive?.intervalMs ?? KEEPALIVE_MS
  // One timer pings every connection in turn (each about once an interval), not a timer per connection.
  const keepalives = new PeriodicSweep<() => void>(keepaliveMs, (keepalive) => keepalive(), timers, (error) =>
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

  const server = makeServer<Record<string, unknown> | undefined, { socket: WebSocket }>({
    connectionInitWaitTimeout: options.connectionInitWaitTimeoutMs,
    execute: (args: ExecutionArgs) => takeRoot(args).enveloped.execute(args),
    subscribe: (args: ExecutionArgs) => {
      const { enveloped, cohort } = takeRoot(args)
      const subscribe = (a: ExecutionArgs) => enveloped.subscribe(a) as Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult>
      return cohort ? joinFeedCohort(cohorts, cohort, cohort.sink, args, subscribe) : subscribe(args)
    },
    onConnect: async (ctx) => {
      const header = ctx.connectionParams?.authorization
      const token = bearerToken(typeof header === 'string' ? header : undefined)
      const connection = connections.get(ctx.extra.socket)
      if (!connection || !(await connection.access.connect(token))) {
        if (connection) connection.refusal = token ? 'unknown token' : 'no token'
        return false
      }
      connection.socketContext = ctx
      metrics.websocketConnections.inc()
      logger.debug({ action: 'ws.connect', client: connection.memberships.id }, 'websocket connected')
      return true
    },
    onOperation: (ctx, id, _payload, args, result) => {
      // Counted once a stream exists: a start refused or failed (FORBIDDEN, RATE_LIMITED) is an error, not a subscription.
      if (Symbol.asyncIterator in result && getOperationAST(args.document, args.operationName)?.operation === 'subscription') {
        subscriptionStats.beginOwned(ctx.extra.socket, id, 'ws', subscriptionField(args.schema, args.document, args.operationName))
        const connection = connections.get(ctx.extra.socket)
        connection?.access.subscribed(id)
        // A cohort member's results come from the shared execution, never from its own context:
        // neither graphql-ws (which keeps the execution arguments for the subscription's life) nor
        // the routing table needs it once started; an idle member then holds a few hundred bytes.
        if (connection && cohortMembers.has(args)) {
          cohortMembers.delete(args)
          if (connection.subscriptions.has(id)) connection.subscriptions.set(id, COHORT_MEMBER)
          args.contextValue = undefined
        }
      }
    },
    // Errors leave in the contract's shape and are counted here, where the frame carrying them is formed.
    onNext: (_ctx, _id, _payload, _args, result) => socketResult(result, countError),
    onError: (ctx, id, _payload, errors) => {
      for (const error of errors)
        if (error.originalError && !(error.originalError instanceof GraphQLError))
          logger.error({ err: error.originalError, client: connections.get(ctx.extra.socket)?.memberships.id, operation: id }, 'graphql-ws operation failed')
      return socketErrors(errors, countError)
    },
    onComplete: (ctx, id) => {
      subscriptionStats.endOwned(ctx.extra.socket, id)
      connections.get(ctx.extra.socket)?.access.ended(id)
      // Still listed by graphql-ws means a complete frame follows, and route() releases the entry once it
      // is queued behind the subscription's results; otherwise (the client completed, the operation
      // failed, the socket closed) no frame follows and this is the last chance.
      if (!(id in ctx.subscriptions)) connections.get(ctx.extra.socket)?.subscriptions.delete(id)
    },
    onSubscribe: async (ctx, id, payload) => {
      const connection = connections.get(ctx.extra.socket)!
      const since = connection.access.generation
      const scopes: string[] = []
      // The caller is set once the operation is known to be allowed (below).
      const websocket: WebSocketOperationContext = { principal: null, connection: connection.memberships, onWorkspaceScope: (workspaceId) => scopes.push(workspaceId) }
      // Only what the context factory reads: the context lives as long as a subscription does.
      const enveloped = yoga.getEnveloped({ params: payload, websocket })
      let document
      try {
        document = enveloped.parse(payload.query)
      } catch (error) {
        // A throw here would close the whole socket (4500); a syntax error is the operation's own failure.
        if (error instanceof GraphQLError)
          return [new GraphQLError(error.message, { extensions: { code: 'BAD_USER_INPUT', ...error.extensions } })]
        throw error
      }
      const errors = enveloped.validate(enveloped.schema, document)
      if (errors.length > 0) return errors
      const operation = getOperationAST(document, payload.operationName)
      // Authorized against the token's current state, not the state at connection_init.
      websocket.principal = await connection.access.current()
      if (!websocket.principal) return [new GraphQLError("This connection's token no longer authenticates.", { extensions: { code: 'UNAUTHENTICATED' } })]
      const contextValue = (await enveloped.contextFactory()) as unknown as Context
      let cohort: OperationRoot['cohort']
      if (operation?.operation === 'subscription') {
        // Checked and taken without an await in between, so concurrent subscribe messages cannot overshoot.
        // BAD_USER_INPUT like every fixed limit: waiting does not help, completing a subscription does.
        const cap = options.maxSubscriptionsPerConnection ?? 100
        if (connection.subscriptions.size >= cap)
          return [new GraphQLError(`At most ${cap} subscriptions per connection; complete one first.`, { extensions: { code: 'BAD_USER_INPUT', limit: 'maxSubscriptionsPerConnection' } })]
        const tags = new DeliveryTags()
        contextValue.deliveryTags = tags
        connection.subscriptions.set(id, tags)
        connection.access.subscribing(id, scopes, since)
        const fields = operation.selectionSet.selections
        const field = fields.length === 1 && fields[0]!.kind === Kind.FIELD ? fields[0]! : undefined
        // Keyed without the resume cursor: a resumed member replays for itself, then shares the live execution.
        if (options.multiplex !== false && field && MULTIPLEXABLE_FIELDS.has(field.name.value))
          cohort = {
            ...feedCohortPlan(field, document, payload.query, payload.operationName, payload.variables),
            sink: new CohortMember(connection, id),
          }
      } else connection.access.answering(id)
      const rootValue: OperationRoot = { enveloped, cohort }
      const args: ExecutionArgs = {
        schema: enveloped.schema,
        operationName: payload.operationName,
        document,
        variableValues: payload.variables,
        contextValue,
        rootValue,
      }
      if (cohort) {
        cohortMembers.add(args)
        // graphql-ws keeps the subscribe message for the subscription's life; its query text (1.3 KB
        // for the SDK's feed operation) is parsed, and cached by text, already.
        ;(payload as { query: string }).query = ''
      }
      return args
    },
  })

  /**
   * Each cohort result's payload as graphql-ws would write it (onNext's error shaping included),
   * serialized and encoded once for all members.
   */
  const payloads = new WeakMap<ExecutionResult, Buffer>()
  const payloadOf = (result: ExecutionResult): Buffer => {
    let bytes = payloads.get(result)
    if (bytes === undefined) {
      const { errors: _errors, ...data } = result
      // Errors, if any, are counted once per event here rather than once per member.
      bytes = Buffer.from(JSON.stringify(socketResult(result, countError) ?? data))
      payloads.set(result, bytes)
    }
    return bytes
  }
  const FRAME_END = Buffer.from('}')

  /**
   * A cohort member's results, written as the same `next` frames graphql-ws writes, straight to
   * its scheduler: its own head (its operation id) around the payload bytes every member shares,
   * so a delivery copies bytes instead of building and encoding a string.
   */
  class CohortMember implements CohortSink {
    #head: Buffer | undefined

    constructor(
      private readonly connection: Connection,
      private readonly id: string,
    ) {}

    next(result: ExecutionResult): void {
      // Completed by the client (or refused) already: graphql-ws would not send it either.
      if (!this.connection.subscriptions.has(this.id)) return
      this.#head ??= Buffer.from(`{"id":${JSON.stringify(this.id)},"type":"next","payload":`)
      this.connection.scheduler.enqueueSemantic(Buffer.concat([this.#head, payloadOf(result), FRAME_END]))
    }
  }

  /**
   * The caller's membership of the subscription's workspace was removed: it ends with FORBIDDEN as
   * a client's complete would end it (graphql-ws then sends nothing more for it), and the
   * connection's other operations go on.
   */
  function endForbidden(connection: Connection, id: string): void {
    const operations = connection.socketContext?.subscriptions
    // Null while the stream is being made: graphql-ws then returns it itself, seeing the id gone.
    if (!operations || !(id in operations)) return
    const operation = operations[id]
    delete operations[id]
    connection.subscriptions.delete(id)
    const error = forbidden('this workspace').toJSON()
    connection.scheduler.enqueueControl(`{"id":${JSON.stringify(id)},"type":"error","payload":${JSON.stringify([error])}}`)
    countError('FORBIDDEN')
    if (operation && 'return' in operation && typeof operation.return === 'function')
      (operation.return(undefined) as Promise<unknown>).catch((err: unknown) => logger.warn({ err, client: connection.memberships.id, operation: id }, 'ending a forbidden subscription failed'))
  }

  /** Sorts each outgoing graphql-ws frame into its delivery class. */
  function route(connection: Connection, data: string): void {
    const { type, id } = frameHeader(data)
    const tags = id === undefined ? undefined : connection.subscriptions.get(id)
    if (!tags) return connection.scheduler.enqueueControl(data)
    if (type !== 'next') {
      connection.subscriptions.delete(id!)
      return connection.scheduler.enqueueSemantic(data, tags.pending?.sessionId)
    }
    const tag = tags.take()
    if (tag?.frameClass === 'replaceable') {
      // Keyed per subscription too: two subscriptions of one session on a connection each follow their own appends.
      const frame = tag.entryOf ? tag.entryOf(data) : data
      return connection.scheduler.enqueueReplaceable(frame, tag.sessionId, `${tag.key} ${id}`)
    }
    connection.scheduler.enqueueSemantic(data, tag?.sessionId)
  }

  wss.on('connection', (socket) => {
    const memberships = new ConnectionMemberships(randomUUID())
    const scheduler = new OutboundScheduler(
      {
        get bufferedAmount() {
          return socket.bufferedAmount
        },
        // Text frames always: ws would send a Buffer (a cohort's shared frame) as binary.
        send: (frame, done) => socket.send(frame, TEXT_FRAME, done),
        ping: (payload) => socket.ping(payload),
        batch: (writes) => {
          // ws keeps its TCP socket as `_socket` and offers no cork of its own; a frame and the
          // probe after it then leave in one writev instead of two.
          const tcp = (socket as unknown as { _socket?: { cork(): void; uncork(): void } })._socket
          tcp?.cork()
          try {
            writes()
          } finally {
            tcp?.uncork()
          }
        },
        close: (code, reason) => {
          // graphql-ws's closes and the 1013 overflow come here; so does the echo of a close the client began, not counted.
          if (socket.readyState === socket.OPEN) connection.closedByServer(code, { refusal: connection.refusal })
          socket.close(code, reason)
        },
      },
      limits,
      {
        replaced: () => delivery.replacements.inc(),
        evicted: (sessionId) => {
          delivery.evictions.inc()
          logger.debug({ client: memberships.id, sessionId, queueClass: 'replaceable', action: 'evict' }, 'replaceable frame evicted')
        },
        overflowClosed: (frameClass) => {
          delivery.overflowCloses.inc({ class: frameClass })
          connection.closedByServer(1013, { queueClass: frameClass })
        },
      },
    )
    const connection: Connection = {
      memberships,
      scheduler,
      subscriptions: new Map(),
      closedByServer: closeRecorder(memberships.id),
      access: new ConnectionAccess(access, {
        closeRevoked: () => {
          if (socket.readyState === socket.OPEN) connection.closedByServer(CloseCode.Forbidden, { refusal: 'token revoked' })
          scheduler.closeAfterControl(CloseCode.Forbidden, 'Forbidden')
          // A socket that takes no more never drains: closed anyway, within the contract's second.
          timers.setTimeout(() => socket.terminate(), REVOKED_DRAIN_MS)
        },
        closeNow: () => scheduler.close(CloseCode.Forbidden, 'Forbidden'),
        endSubscription: (id) => endForbidden(connection, id),
        timers,
      }),
    }
    connections.set(socket, connection)
    // ws emits this when it refused what the client sent (too big, bad UTF-8, bad framing) and has already closed.
    socket.once('error', (error: Error & { code?: string }) => {
      const code = closeCodeOfSocketError(error)
      connection.closedByServer(code, code === CloseCode.InternalServerError ? { err: error } : { wsError: error.code })
      socket.close(CloseCode.InternalServerError, 'Internal server error')
    })
    let answered = true
    // Keepalive pings carry no payload; the scheduler's window probes do (send-window.ts). Any pong proves the peer alive.
    socket.on('pong', (payload: Buffer) => {
      answered = true
      if (payload.length > 0) scheduler.acknowledge(payload.toString('latin1'))
    })
    const keepalive = () => {
      if (socket.readyState !== socket.OPEN) return
      if (!answered) {
        connection.closedByServer(KEEPALIVE_CLOSE_CODE, { keepaliveMs: String(keepaliveMs) })
        return socket.terminate()
      }
      answered = false
      socket.ping()
    }
    keepalives.add(keepalive)
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) => {
          if (socket.readyState === socket.OPEN) route(connection, data)
        },
        close: (code, reason) => scheduler.close(code ?? CloseCode.InternalServerError, reason ?? ""),
        // Not an async listener: graphql-ws's handling of a subscribe message lasts as long as the
        // subscription, and an awaiting listener would keep the message's buffer for all that time.
        onMessage: (cb) =>
          socket.on('message', (event) => {
            cb(String(event)).catch((error: unknown) => {
              logger.error({ err: error, client: memberships.id }, 'graphql-ws message handling failed')
              connection.closedByServer(CloseCode.InternalServerError)
              socket.close(CloseCode.InternalServerError, 'Internal server error')
            })
          }),
      },
      // Not the upgrade request: nothing reads it, and graphql-ws would keep it for the connection's life.
      { socket },
    )
    socket.once('close', (code, reason) => {
      keepalives.delete(keepalive)
      connections.delete(socket)
      connection.access.closed()
      subscriptionStats.endAllOwned(socket)
      scheduler.close(code, String(reason)) // drops whatever was still queued for the gone socket
      options.onConnectionClosed?.(memberships.id)
      closed(code, String(reason)).catch((error: unknown) =>
        logger.warn({ err: error, client: memberships.id, action: 'ws.close' }, 'ending the operations of a closed websocket failed'),
      )
    })
  })

  return {
    connections: () => [...connections.values()],
    cohorts,
    /** How many entries the gateway holds, per table (tests prove every path frees what it took). */
    tableSizes() {
      const sizes = { connections: connections.size, subscriptions: 0, memberships: 0, schedulerSessions: 0, cohorts: cohorts.size }
      for (const c of connections.values()) {
        sizes.subscriptions += c.subscriptions.size
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
