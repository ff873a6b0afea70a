// A stored summary shaped as the TaskStatusSummary type serves it, once per summary served.
import type { ActiveError, Interruption, StoredSummary, SummaryPayload } from './types.ts'

/**
 * Every field of TaskStatusSummary under its own name, with the value it serves (instants as
 * Dates, for the DateTime scalar). The type's fields are then plain properties with no resolver:
 * graphql-jit (src/server/plugins/use-jit-queries.ts) compiles such fields into the query itself,
 * where a resolver costs a call, a resolve info and a deferred completion per field — for a
 * 500-task page with every summary field that was most of its execution time and garbage
 * (bench/p4-profile.ts).
 */
export interface SummaryView {
  id: string
  taskId: string
  revision: number
  updatedAt: Date
  lastActivityAt: Date | null
  primarySession: SummaryPayload['primarySession']
  foregroundActivity: SummaryPayload['foregroundActivity']
  activeSubagentCount: number
  pendingAction: SummaryPayload['pendingAction']
  activeError: ActiveErrorView | null
  git: SummaryPayload['git']
  pullRequest: SummaryPayload['pullRequest']
  waitingSince: Date | null
  queuedPromptCount: number
  interruption: InterruptionView | null
}

export type ActiveErrorView = Omit<ActiveError, 'occurredAt'> & { occurredAt: Date }
export type InterruptionView = Omit<Interruption, 'at'> & { at: Date }

/** An ISO string of the payload as the DateTime scalar takes it (empty or absent: none). */
const instant = (iso: string | null | undefined) => (iso ? new Date(iso) : null)

/**
 * The served shape of a stored summary. The values are exactly what the type's former per-field
 * resolvers returned (the `id` is the task's, instants are parsed from the payload's ISO strings),
 * so the response is byte for byte the same.
 */
export function summaryView(summary: StoredSummary): SummaryView {
  const p = summary.payload
  const e = p.activeError
  const i = p.interruption
  return {
    id: summary.taskId,
    taskId: summary.taskId,
    revision: summary.revision,
    updatedAt: summary.updatedAt,
    lastActivityAt: instant(p.lastActivityAt),
    primarySession: p.primarySession ?? null,
    foregroundActivity: p.foregroundActivity ?? null,
    activeSubagentCount: p.activeSubagentCount,
    pendingAction: p.pendingAction ?? null,
    activeError: e
      ? {
          sessionId: e.sessionId,
          taskRepositoryId: e.taskRepositoryId,
          stamp: e.stamp,
          occurredAt: new Date(e.occurredAt),
          preview: e.preview,
          category: e.category,
          recoveryActions: e.recoveryActions,
        }
      : null,
    git: p.git ?? null,
    pullRequest: p.pullRequest ?? null,
    waitingSince: instant(p.waitingSince),
    queuedPromptCount: p.queuedPromptCount,
    interruption: i ? { sessionId: i.sessionId, reason: i.reason, at: new Date(i.at) } : null,
  }
}
