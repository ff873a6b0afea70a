// A process census of agents: every agent process carries the session it serves in its
// environment (AGENT_SESSION_ID_ENV), so reading /proc every 100 ms tells whether two agent
// processes ever ran for one session at once, on whichever instance.
import { readdirSync, readFileSync } from 'node:fs'
import { AGENT_SESSION_ID_ENV } from '../../src/agents/agent-process.ts'

/** Running agent processes (zombies have no environment left) by session. */
export function agentsBySession(): Map<string, number[]> {
  const bySession = new Map<string, number[]>()
  const prefix = `${AGENT_SESSION_ID_ENV}=`
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid)) continue
    let environ: string
    try {
      environ = readFileSync(`/proc/${pid}/environ`, 'latin1')
    } catch {
      continue // gone meanwhile, or not ours
    }
    const variable = environ.split('\0').find((v) => v.startsWith(prefix))
    if (!variable) continue
    const sessionId = variable.slice(prefix.length)
    bySession.set(sessionId, [...(bySession.get(sessionId) ?? []), pid])
  }
  return bySession
}

export interface CensusReport {
  samples: number
  /** Samples in which some session had more than one agent process: when, which, and their pids. */
  doubles: { at: number; sessionId: string; pids: number[] }[]
  /** The most agent processes seen at once for each session. */
  maxPerSession: Map<string, number>
}

/**
 * Takes a census every `intervalMs` until stopped, of the agents of `sessionIds` only: the
 * sessions the test started, so agents of other runs on a shared machine are never counted.
 */
export function startAgentCensus(sessionIds: readonly string[], intervalMs = 100) {
  const ours = new Set(sessionIds)
  const report: CensusReport = { samples: 0, doubles: [], maxPerSession: new Map() }
  const take = () => {
    report.samples++
    for (const [sessionId, pids] of agentsBySession()) {
      if (!ours.has(sessionId)) continue
      report.maxPerSession.set(sessionId, Math.max(report.maxPerSession.get(sessionId) ?? 0, pids.length))
      if (pids.length > 1) report.doubles.push({ at: Date.now(), sessionId, pids })
    }
  }
  take()
  const timer = setInterval(take, intervalMs)
  return {
    report,
    stop(): CensusReport {
      clearInterval(timer)
      take()
      return report
    },
  }
}
