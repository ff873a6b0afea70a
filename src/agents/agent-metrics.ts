import { Counter, type Registry } from 'prom-client'
import type { Logger } from '../observability/logger.ts'
import type { CoalescerStats, StreamKind } from './coalescer.ts'

/**
 * Stream counters over all sessions. Labels stay bounded (only the stream `kind`): a session id
 * label would grow the series with every session ever run. Per-session figures go to the log
 * once the session's runtime ends (counts only, never content).
 */
export function createAgentMetrics(registry: Registry) {
  const chunksReceived = new Counter({
    name: 'agent_chunks_received_total',
    help: 'Streamed text chunks received from agents, by stream kind',
    labelNames: ['kind'] as const,
    registers: [registry],
  })
  const publications = new Counter({
    name: 'agent_stream_publications_total',
    help: 'Coalesced stream updates persisted and published (MessageUpdated)',
    registers: [registry],
  })
  const coalesced = new Counter({
    name: 'agent_chunks_coalesced_total',
    help: 'Chunks folded into a later publication instead of being published alone, per finished session',
    registers: [registry],
  })
  return {
    /** `count`: chunks the agent sent, joined into one update before the SDK (chunk-merge.ts). */
    chunkReceived(kind: StreamKind, count = 1) {
      chunksReceived.inc({ kind }, count)
    },
    published() {
      publications.inc()
    },
    /** A runtime ended: its coalescing total joins the counter, its own figures go to the log. */
    sessionEnded(sessionId: string, stats: CoalescerStats, logger: Logger) {
      coalesced.inc(stats.coalesced)
      logger.info({ sessionId, action: 'session.stream_stats', ...stats }, 'session stream figures')
    },
  }
}

export type AgentMetrics = ReturnType<typeof createAgentMetrics>
