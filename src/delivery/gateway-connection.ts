import { randomUUID } from 'node:crypto'
import type { WebSocket } from 'ws'
import { CloseCode, type Context as SocketContext, type Server } from 'graphql-ws'
import type { AccessControl } from '../access/access-control.ts'
import type { Logger } from '../observability/logger.ts'
import type { Scheduler } from '../util/scheduler.ts'
import { ConnectionMemberships } from '../session-stream/connection-scope.ts'
import { ConnectionAccess, type ConnectionAccessHooks } from './connection-access.ts'
import type { DeliveryTags } from '../outbound/delivery-tags.ts'
import { closeRevoked, endForbidden } from './gateway-auth.ts'
import type { GatewayMetrics } from './gateway-metrics.ts'
import { OutboundScheduler, type FrameClass, type SchedulerEvents, type SchedulerLimits } from '../outbound/outbound-scheduler.ts'
import { WsWriter, type WriterHooks } from '../outbound/ws-writer.ts'
import { completedId, type MemberSink } from './detached-members.ts'
import { routeFrame } from './frame-routing.ts'
import { closeCodeOfSocketError, KEEPALIVE_CLOSE_CODE } from './server-closes.ts'

/** graphql-ws's state of one socket. */
export type GraphqlWsContext = SocketContext<Record<string, unknown> | undefined, { socket: WebSocket }>

export interface ConnectionServices {
  access: AccessControl
  limits: SchedulerLimits
  logger: Logger
  observe: GatewayMetrics
  timers: Scheduler
  /** The keepalive interval: a client that has not answered a ping by the next is dropped. */
  keepaliveMs: number
  /** The socket closed: the gateway lets go of what it held for the connection (graphql-ws then ends its operations). */
  released(connection: Connection, code: number, reason: string): void
}

/** Where a socket's own listeners (module-level functions, not closures per socket) find its connection. */
const CONNECTION = Symbol('gateway connection')
type ConnectedSocket = WebSocket & { [CONNECTION]?: Connection }

/**
 * What the gateway holds for one WebSocket connection: its outbound scheduler, its access, its
 * session memberships and its subscriptions. One object whose behaviour lives on the prototype:
 * it is the scheduler's events, the writer's close hook and the access's hooks itself, so a
 * connection costs no closure per hook.
 */
export class Connection implements ConnectionAccessHooks, SchedulerEvents, WriterHooks {
  readonly memberships: ConnectionMemberships
  readonly scheduler: OutboundScheduler
  /** Operation id → how its results are delivered, for subscriptions (results are classified by their tag). */
  readonly subscriptions = new Map<string, DeliveryTags>()
  /** The caller, each operation authorized against the token's current state, and what revocation ends. */
  readonly access: ConnectionAccess
  /** Why onConnect refused, for the 4403 close line. */
  refusal?: string
  /** Cohort members the gateway runs itself, by operation id (detached-members.ts); made with the first. */
  members?: Map<string, MemberSink>
  /** graphql-ws's state of this socket: its operations, so a revoked one can be ended from here. */
  socketContext?: GraphqlWsContext
  /** graphql-ws's handling of the client's messages (GraphqlWsSocket.onMessage). */
  handleMessage?: MessageHandler
  /** graphql-ws's end of the socket's operations, called once it closes (serveGraphqlWs). */
  endOperations?: (code: number, reason: string) => Promise<void>
  /** The client answered the last keepalive ping (any pong does). */
  #answered = true
  #closeRecorded = false

  constructor(
    readonly socket: WebSocket,
    private readonly services: ConnectionServices,
    /** The client's address: a socket refused (4403) or dropped for flooding (4429) is a client to look at. */
    private readonly address?: string,
  ) {
    this.memberships = new ConnectionMemberships(randomUUID())
    this.scheduler = new OutboundScheduler(new WsWriter(socket, this), services.limits, this)
    this.access = new ConnectionAccess(services.access, this)
    ;(socket as ConnectedSocket)[CONNECTION] = this
    socket.on('pong', onPong)
    // ws emits this when it refused what the client sent (too big, bad UTF-8, bad framing) and has already closed.
    socket.on('error', onSocketError)
  }

  get log(): Logger {
    return this.services.logger
  }

  /** Logs and counts the close the server decides, once (server-closes.ts). */
  closedByServer(code: number, detail?: Record<string, unknown>): void {
    if (this.#closeRecorded) return
    this.#closeRecorded = true
    this.services.observe.serverClosed(this.memberships.id, this.address, code, detail)
  }

  /** The writer closes the socket: graphql-ws's closes and the 1013 overflow come here; the echo of a close the client began is not counted. */
  closing(code: number): void {
    if (this.socket.readyState === this.socket.OPEN) this.closedByServer(code, { refusal: this.refusal })
  }

  // The scheduler's events (SchedulerEvents).
  replaced(): void {
    this.services.observe.replaced()
  }

  evicted(sessionId: string): void {
    this.services.observe.evicted(this.memberships.id, sessionId)
  }

  overflowClosed(frameClass: FrameClass): void {
    this.services.observe.overflowClosed(frameClass)
    this.closedByServer(1013, { queueClass: frameClass })
  }

  // The access's hooks (ConnectionAccessHooks).
  get timers(): Scheduler {
    return this.services.timers
  }

  closeRevoked(): void {
    closeRevoked(this, this.services.timers)
  }

  closeNow(): void {
    this.scheduler.close(CloseCode.Forbidden, 'Forbidden')
  }

  endSubscription(id: string): void {
    endForbidden(this, id, { logger: this.services.logger, countError: this.services.observe.countError })
  }

  /**
   * The keepalive, for the gateway's sweep to call about once an interval: a client that has not
   * answered the previous ping is dropped. Keepalive pings carry no payload; the scheduler's
   * window probes do (send-window.ts). Any pong proves the peer alive.
   */
  keepalive(): void {
    const socket = this.socket
    if (socket.readyState !== socket.OPEN) return
    if (!this.#answered) {
      this.closedByServer(KEEPALIVE_CLOSE_CODE, { keepaliveMs: String(this.services.keepaliveMs) })
      return socket.terminate()
    }
    this.#answered = false
    socket.ping()
  }

  pong(payload: Buffer): void {
    this.#answered = true
    if (payload.length > 0) this.scheduler.acknowledge(payload.toString('latin1'))
  }

  /** The socket closed (once: ws closes once; `on`, not `once`, spares a wrapper per socket). */
  closed(code: number, reason: string): void {
    const endOperations = this.endOperations
    if (!endOperations) return
    this.endOperations = undefined
    this.services.released(this, code, reason)
    endOperations(code, reason).catch((error: unknown) =>
      this.log.warn({ err: error, client: this.memberships.id, action: 'ws.close' }, 'ending the operations of a closed websocket failed'),
    )
  }
}

function onPong(this: ConnectedSocket, payload: Buffer): void {
  this[CONNECTION]?.pong(payload)
}

function onSocketError(this: ConnectedSocket, error: Error & { code?: string }): void {
  // ws has closed already; `on`, not `once`, spares a wrapper per socket (a later error finds the close recorded).
  const code = closeCodeOfSocketError(error)
  this[CONNECTION]?.closedByServer(code, code === CloseCode.InternalServerError ? { err: error } : { wsError: error.code })
  this.close(CloseCode.InternalServerError, 'Internal server error')
}

type GraphqlWsServer = Server<{ socket: WebSocket }>
type MessageHandler = (data: string) => Promise<void>

/**
 * Hands the socket to graphql-ws: its frames go through the connection's scheduler (routeFrame),
 * the client's messages to graphql-ws; once the socket closed, the gateway releases what it held
 * for the connection (ConnectionServices.released), then graphql-ws ends its operations. The
 * socket graphql-ws writes to is an object of its own class and the socket's listeners are module
 * functions: no closure per connection.
 */
export function serveGraphqlWs(server: GraphqlWsServer, connection: Connection): void {
  const socket = connection.socket as ConnectedSocket
  // Not the upgrade request: nothing reads it, and graphql-ws would keep it for the connection's life.
  connection.endOperations = server.opened(new GraphqlWsSocket(connection), { socket })
  socket.on('close', onSocketClose)
}

/** The socket as graphql-ws writes to it and reads from it. */
class GraphqlWsSocket {
  readonly protocol: string

  constructor(private readonly connection: Connection) {
    this.protocol = connection.socket.protocol
  }

  send(data: string): void {
    if (this.connection.socket.readyState === this.connection.socket.OPEN) routeFrame(this.connection, data)
  }

  close(code?: number, reason?: string): void {
    this.connection.scheduler.close(code ?? CloseCode.InternalServerError, reason ?? '')
  }

  // Not an async listener: graphql-ws's handling of a subscribe message lasts as long as the
  // subscription, and an awaiting listener would keep the message's buffer for all that time.
  onMessage(handler: MessageHandler): void {
    this.connection.handleMessage = handler
    this.connection.socket.on('message', onSocketMessage)
  }
}

function onSocketMessage(this: ConnectedSocket, event: Buffer): void {
  const connection = this[CONNECTION]
  if (!connection?.handleMessage) return
  const message = String(event)
  // graphql-ws no longer knows a detached member's id: the client's complete ends it here.
  if (connection.members?.size) {
    const id = completedId(message)
    if (id !== undefined) connection.members.get(id)?.stop()
  }
  connection.handleMessage(message).catch((error: unknown) => {
    connection.log.error({ err: error, client: connection.memberships.id }, 'graphql-ws message handling failed')
    connection.closedByServer(CloseCode.InternalServerError)
    this.close(CloseCode.InternalServerError, 'Internal server error')
  })
}

function onSocketClose(this: ConnectedSocket, code: number, reason: Buffer): void {
  this[CONNECTION]?.closed(code, String(reason))
}
