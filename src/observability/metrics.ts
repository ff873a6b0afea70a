import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/**
 * prom-client's default metrics (process, heap, GC, event-loop delay), registered at the first
 * scrape rather than at start. Their event-loop delay histogram wakes the loop every
 * `eventLoopMonitoringPrecision` ms whether anyone reads it or not: at prom-client's 10 ms that was
 * 100 wakeups a second, over half of an idle server's CPU. So a server nothing scrapes samples
 * nothing, and one that is scraped samples every 50 ms: a stall still shows in
 * nodejs_eventloop_lag_max_seconds (a sample spans at most 50 ms plus the stall), while the idle
 * floor of min, mean and p50 reads about 0.05 s instead of 0.01 s (each sample includes the
 * interval). The first scrape reports an empty histogram, and GC counts start from it.
 */
class LazyDefaultsRegistry extends Registry {
  #defaults = false

  override metrics(): Promise<string> {
    if (!this.#defaults) {
      this.#defaults = true
      collectDefaultMetrics({ register: this, eventLoopMonitoringPrecision: 50 })
    }
    return super.metrics()
  }
}

/** One registry per server instance, so tests can run several instances in one process. */
export function createMetrics() {
  const registry = new LazyDefaultsRegistry()
  return {
    registry,
    requestDuration: new Histogram({
      name: 'graphql_request_duration_seconds',
      help: 'GraphQL operation latency by transport and operation type',
      labelNames: ['transport', 'operation'] as const,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    graphqlErrors: new Counter({
      name: 'graphql_errors_total',
      help: 'GraphQL errors returned to clients (request, validation, limit and execution errors, both transports), by extensions.code',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    // `field` is a root field of the schema's Subscription type (or "unknown"), so the series stay few.
    subscriptionsStarted: new Counter({
      name: 'graphql_subscriptions_started_total',
      help: 'Subscriptions that started streaming, by transport and root field',
      labelNames: ['transport', 'field'] as const,
      registers: [registry],
    }),
    subscriptionsActive: new Gauge({
      name: 'graphql_subscriptions_active',
      help: 'Subscriptions streaming now, by transport and root field',
      labelNames: ['transport', 'field'] as const,
      registers: [registry],
    }),
    subscriptionDuration: new Histogram({
      name: 'graphql_subscription_duration_seconds',
      help: 'Lifetime of a subscription from its start to its end (client or server complete, error, socket close)',
      labelNames: ['transport', 'field'] as const,
      buckets: [1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600],
      registers: [registry],
    }),
    projectorRevisions: new Counter({
      name: 'projector_revisions_total',
      help: 'Summary revisions written (and published) by the projector',
      registers: [registry],
    }),
    projectorNoops: new Counter({
      name: 'projector_noops_total',
      help: 'Projections that found the stored summary already current',
      registers: [registry],
    }),
    projectorRetries: new Counter({
      name: 'projector_retries_total',
      help: 'Compare-and-update rejections that made the projector reload and retry',
      registers: [registry],
    }),
    projectorFailures: new Counter({
      name: 'projector_failures_total',
      help: 'Projections that failed (invalid summary, exhausted retries, database error); the last valid summary stays',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    websocketConnections: new Counter({
      name: 'websocket_connections_total',
      help: 'graphql-ws connections accepted',
      registers: [registry],
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>
