import type { WebSocket } from 'ws'
import type { ExecutionArgs } from 'graphql'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import { errorCounter, subscriptionField, subscriptionMetrics } from '../observability/graphql-metrics.ts'
import { createDeliveryMetrics } from './metrics.ts'
import type { FrameClass, OutboundScheduler } from '../outbound/outbound-scheduler.ts'
import { recordServerClose } from './server-closes.ts'

/**
 * What the gateway counts and logs beside delivering: its queues and closes (metrics.ts,
 * server-closes.ts), GraphQL errors by code, and WebSocket subscriptions by root field.
 */
export function gatewayMetrics(metrics: Metrics, logger: Logger, schedulers: () => OutboundScheduler[]) {
  const delivery = createDeliveryMetrics(metrics.registry, schedulers)
  const subscriptions = subscriptionMetrics(metrics)
  return {
    websocketConnections: metrics.websocketConnections,
    countError: errorCounter(metrics),
    /** Logs and counts a close the server decided (the connection asks once). */
    serverClosed: (client: string, address: string | undefined, code: number, detail?: Record<string, unknown>) =>
      recordServerClose(delivery.serverCloses, logger, client, address, code, detail),
    subscriptionStarted(socket: WebSocket, id: string, args: ExecutionArgs): void {
      subscriptions.beginOwned(socket, id, 'ws', subscriptionField(args.schema, args.document, args.operationName))
    },
    subscriptionEnded: (socket: WebSocket, id: string) => subscriptions.endOwned(socket, id),
    socketClosed: (socket: WebSocket) => subscriptions.endAllOwned(socket),
    /** The schedulers' replacements, evictions and overflow closes. */
    replaced: () => delivery.replacements.inc(),
    evicted(client: string, sessionId: string): void {
      delivery.evictions.inc()
      logger.debug({ client, sessionId, queueClass: 'replaceable', action: 'evict' }, 'replaceable frame evicted')
    },
    overflowClosed: (frameClass: FrameClass) => delivery.overflowCloses.inc({ class: frameClass }),
  }
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>
