import { Counter, Gauge, type Registry } from 'prom-client'
import type { FrameClass, OutboundScheduler } from '../outbound/outbound-scheduler.ts'

/** Queue depth per class (summed over open connections), replacements, evictions, 1013 closes, every close the server decides. */
export function createDeliveryMetrics(registry: Registry, schedulers: () => Iterable<OutboundScheduler>) {
  return {
    depth: new Gauge({
      name: 'delivery_queue_depth',
      help: 'Frames waiting in outbound queues, by class, over all WebSocket connections',
      labelNames: ['class'] as const,
      registers: [registry],
      collect() {
        const sum: Record<FrameClass, number> = { control: 0, semantic: 0, replaceable: 0 }
        for (const s of schedulers()) for (const [k, v] of Object.entries(s.depth)) sum[k as FrameClass] += v
        for (const [k, v] of Object.entries(sum)) this.set({ class: k }, v)
      },
    }),
    connections: new Gauge({
      name: 'delivery_connections',
      help: 'Open graphql-ws connections',
      registers: [registry],
      collect() {
        this.set([...schedulers()].length)
      },
    }),
    replacements: new Counter({ name: 'delivery_replacements_total', help: 'Queued MessageUpdated frames replaced in place by a newer one', registers: [registry] }),
    evictions: new Counter({
      name: 'delivery_evictions_total',
      help: 'Replaceable frames evicted from a session over its own allowance, or from the session holding the most keys when the connection allowance was full',
      registers: [registry],
    }),
    overflowCloses: new Counter({
      name: 'delivery_overflow_closes_total',
      help: 'Connections closed with 1013 because a queue overflowed, by class',
      labelNames: ['class'] as const,
      registers: [registry],
    }),
    serverCloses: new Counter({
      name: 'websocket_server_closes_total',
      help: 'WebSocket connections the server ended (keepalive timeout, 1013 overflow, graphql-ws 4xxx, 1009, shutdown, ...), by close code and reason (fixed sets)',
      labelNames: ['code', 'reason'] as const,
      registers: [registry],
    }),
  }
}

export type DeliveryMetrics = ReturnType<typeof createDeliveryMetrics>
