import type { WebSocket } from 'ws'
import type { ExecutionArgs } from 'graphql'
import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import { errorCounter, subscriptionField, subscriptionMetrics } from '../observability/graphql-metrics.ts'
import { createDeliveryMetrics } from './metrics.ts'
import type { OutboundScheduler, SchedulerEvents } from '../outbound/outbound-scheduler.ts'
import { serverCloseRecorder } from './server-closes.ts'

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
    /** Per connection: logs and counts the close the server decides, once. */
    closeRecorder: serverCloseRecorder(delivery.serverCloses, logger),
    subscriptionStarted(socket: WebSocket, id: string, args: ExecutionArgs): void {
      subscriptions.beginOwned(socket, id, 'ws', subscriptionField(args.schema, args.document, args.operationName))
    },
    subscriptionEnded: (socket: WebSocket, id: string) => subscriptions.endOwned(socket, id),
    socketClosed: (socket: WebSocket) => subscriptions.endAllOwned(socket),
    /** The scheduler's replacements, evictions and overflow closes of one connection. */
    schedulerEvents(client: string, closedByServer: (code: number, detail?: Record<string, unknown>) => void): SchedulerEvents {
      return {
        replaced: () => delivery.replacements.inc(),
        evicted: (sessionId) => {
          delivery.evictions.inc()
          logger.debug({ client, sessionId, queueClass: 'replaceable', action: 'evict' }, 'replaceable frame evicted')
        },
        overflowClosed: (frameClass) => {
          delivery.overflowCloses.inc({ class: frameClass })
          closedByServer(1013, { queueClass: frameClass })
        },
      }
    },
  }
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>
