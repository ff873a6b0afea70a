import { Counter, type Registry } from 'prom-client'
import type { CoalescerStats } from './coalescer.ts'

/** Per-session stream counters (label: session id; a session's series go when it ends). */
export function createAgentMetrics(registry: Registry) {
  const chunksReceived = new Counter({
    name: 'agent_chunks_received_total',
    help: 'Streamed text chunks received from agents, per session',
    labelNames: ['session'] as const,
    registers: [registry],
  })
  const publications = new Counter({
    name: 'agent_stream_publications_total',
    help: 'Coalesced stream updates persisted and published (MessageUpdated), per session',
    labelNames: ['session'] as const,
    registers: [registry],
  })
  const coalesced = new Counter({
    name: 'agent_chunks_coalesced_total',
    help: 'Chunks folded into a later publication instead of being published alone, per finished session',
    registers: [registry],
  })
  return {
    chunksReceived,
    publications,
    coalesced,
    forget(sessionId: string, stats: CoalescerStats) {
      coalesced.inc(stats.coalesced)
      chunksReceived.remove({ session: sessionId })
      publications.remove({ session: sessionId })
    },
  }
}

export type AgentMetrics = ReturnType<typeof createAgentMetrics>
