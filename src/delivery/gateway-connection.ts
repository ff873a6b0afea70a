import { randomUUID } from 'node:crypto'
import type { WebSocket } from 'ws'
import { CloseCode, type Context as SocketContext, type Server as GraphqlWsServer } from 'graphql-ws'
import type { AccessControl } from '../access/access-control.ts'
import type { Logger } from '../observability/logger.ts'
import type { Scheduler } from '../util/scheduler.ts'
import { ConnectionMemberships } from '../session-stream/connection-scope.ts'
import type { ConnectionAccess } from './connection-access.ts'
import type { DeliveryTags } from '../outbound/delivery-tags.ts'
import { socketAccess } from './gateway-auth.ts'
import type { GatewayMetrics } from './gateway-metrics.ts'
import { OutboundScheduler, type SchedulerLimits } from '../outbound/outbound-scheduler.ts'
import { WsWriter } from '../outbound/ws-writer.ts'
import { completedId, type MemberSink } from './detached-members.ts'
import { routeFrame } from './frame-routing.ts'
import { closeCodeOfSocketError, KEEPALIVE_CLOSE_CODE } from './server-closes.ts'

/** graphql-ws's state of one socket. */
export type GraphqlWsContext = SocketContext<Record<string, unknown> | undefined, { socket: WebSocket }>

/** What the gateway holds for one WebSocket connection. */
export interface Connection {
  readonly socket: WebSocket
  memberships: ConnectionMemberships
  scheduler: OutboundScheduler
  /** Operation id → how its results are delivered, for subscriptions (results are classified by their tag). */
  subscriptions: Map<string, DeliveryTags>
  /** Logs and counts the close the server decides, once (server-closes.ts). */
  closedByServer: (code: number, detail?: Record<string, unknown>) => void
  /** Why onConnect refused, for the 4403 close line. */
  refusal?: string
  /** Cohort members the gateway runs itself, by operation id (detached-members.ts); made with the first. */
  members?: Map<string, MemberSink>
  /** graphql-ws's state of this socket: its operations, so a revoked one can be ended from here. */
  socketContext?: GraphqlWsContext
  /** The caller, each operation authorized against the token's current state, and what revocation ends. */
  access: ConnectionAccess
}

export interface ConnectionServices {
  access: AccessControl
  limits: SchedulerLimits
  logger: Logger
  observe: GatewayMetrics
  timers: Scheduler
}

/** A connected socket's state: its outbound scheduler, its access and its session memberships. */
export function openConnection(socket: WebSocket, services: ConnectionServices, address?: string): Connection {
  const { logger, observe } = services
  const memberships = new ConnectionMemberships(randomUUID())
  // The address too: a socket refused (4403) or dropped for flooding (4429) is a client to look at.
  const closedByServer = observe.closeRecorder(memberships.id, address)
  const scheduler = new OutboundScheduler(
    new WsWriter(socket, (code) => {
      // graphql-ws's closes and the 1013 overflow come here; so does the echo of a close the client began, not counted.
      if (socket.readyState === socket.OPEN) closedByServer(code, { refusal: connection.refusal })
    }),
    services.limits,
    observe.schedulerEvents(memberships.id, closedByServer),
  )
  const connection: Connection = {
    socket,
    memberships,
    scheduler,
    subscriptions: new Map(),
    closedByServer,
    access: socketAccess(services.access, socket, () => connection, { timers: services.timers, logger, countError: observe.countError }),
  }
  // ws emits this when it refused what the client sent (too big, bad UTF-8, bad framing) and has already closed.
  socket.once('error', (error: Error & { code?: string }) => {
    const code = closeCodeOfSocketError(error)
    closedByServer(code, code === CloseCode.InternalServerError ? { err: error } : { wsError: error.code })
    socket.close(CloseCode.InternalServerError, 'Internal server error')
  })
  return connection
}

/**
 * The connection's keepalive, for the gateway's sweep to call about once an interval: a client
 * that has not answered the previous ping is dropped. Keepalive pings carry no payload; the
 * scheduler's window probes do (send-window.ts). Any pong proves the peer alive.
 */
export function keepaliveOf(socket: WebSocket, connection: Connection, intervalMs: number): () => void {
  let answered = true
  socket.on('pong', (payload: Buffer) => {
    answered = true
    if (payload.length > 0) connection.scheduler.acknowledge(payload.toString('latin1'))
  })
  return () => {
    if (socket.readyState !== socket.OPEN) return
    if (!answered) {
      connection.closedByServer(KEEPALIVE_CLOSE_CODE, { keepaliveMs: String(intervalMs) })
      return socket.terminate()
    }
    answered = false
    socket.ping()
  }
}

/**
 * Hands the socket to graphql-ws: its frames go through the connection's scheduler (routeFrame),
 * the client's messages to graphql-ws; once the socket closed, `onClosed` releases what the
 * gateway held for it, then graphql-ws ends its operations.
 */
export function serveGraphqlWs(
  server: GraphqlWsServer<{ socket: WebSocket }>,
  socket: WebSocket,
  connection: Connection,
  { logger, onClosed }: { logger: Logger; onClosed: (code: number, reason: string) => void },
): void {
  const client = connection.memberships.id
  const closed = server.opened(
    {
      protocol: socket.protocol,
      send: (data) => {
        if (socket.readyState === socket.OPEN) routeFrame(connection, data)
      },
      close: (code, reason) => connection.scheduler.close(code ?? CloseCode.InternalServerError, reason ?? ''),
      // Not an async listener: graphql-ws's handling of a subscribe message lasts as long as the
      // subscription, and an awaiting listener would keep the message's buffer for all that time.
      onMessage: (cb) =>
        socket.on('message', (event) => {
          const message = String(event)
          // graphql-ws no longer knows a detached member's id: the client's complete ends it here.
          if (connection.members?.size) {
            const id = completedId(message)
            if (id !== undefined) connection.members.get(id)?.stop()
          }
          cb(message).catch((error: unknown) => {
            logger.error({ err: error, client }, 'graphql-ws message handling failed')
            connection.closedByServer(CloseCode.InternalServerError)
            socket.close(CloseCode.InternalServerError, 'Internal server error')
          })
        }),
    },
    // Not the upgrade request: nothing reads it, and graphql-ws would keep it for the connection's life.
    { socket },
  )
  socket.once('close', (code, reason) => {
    onClosed(code, String(reason))
    closed(code, String(reason)).catch((error: unknown) =>
      logger.warn({ err: error, client, action: 'ws.close' }, 'ending the operations of a closed websocket failed'),
    )
  })
}
