// prom-client's default metrics are registered at the first scrape (src/observability/metrics.ts):
// their event-loop delay histogram wakes the loop on a timer, so a server nothing scrapes samples
// nothing; once scraped, every scrape has them.
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observability/metrics.ts'

describe('default metrics', () => {
  it('are registered at the first scrape, and every scrape after it has them', async () => {
    const { registry } = createMetrics()
    expect(registry.getSingleMetric('nodejs_eventloop_lag_max_seconds')).toBeUndefined()
    const first = await registry.metrics()
    for (const name of ['nodejs_eventloop_lag_max_seconds', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'graphql_request_duration_seconds'])
      expect(first).toContain(`# TYPE ${name} `)
    // Registered once: a second scrape neither fails on a duplicate name nor loses a series.
    expect((await registry.metrics()).match(/^# TYPE /gm)?.length).toBe(first.match(/^# TYPE /gm)?.length)
  })
})
