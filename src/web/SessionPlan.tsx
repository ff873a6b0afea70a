import type { PlanEntry, SessionInfo } from '@task-status/client'

const MARK: Record<PlanEntry['status'], string> = { COMPLETED: '✓', IN_PROGRESS: '▸', PENDING: '○' }
const words = (value: string) => value.replaceAll('_', ' ').toLowerCase()

/**
 * What the agent published about how it works: its mode (ACP session modes) and its plan, each
 * entry with its status. Compact: one summary line (how far the plan is), the entries below it in
 * a bounded list; nothing at all when the agent published neither.
 */
export function SessionPlan({ session }: { session: SessionInfo | null }) {
  const plan = session?.plan ?? []
  const mode = session?.currentModeId ?? null
  if (plan.length === 0 && mode === null) return null
  const done = plan.filter((e) => e.status === 'COMPLETED').length
  return (
    <div className="session-agent-state">
      {mode !== null && (
        <span className="session-mode" data-mode={mode}>
          Mode: {mode}
        </span>
      )}
      {plan.length > 0 && (
        <details className="session-plan" open>
          <summary>
            Plan · {done} of {plan.length} done
          </summary>
          {/* A Tab stop: a long plan scrolls inside its box. */}
          <ol aria-label="Plan" tabIndex={0}>
            {plan.map((entry, i) => (
              <li key={i} data-status={entry.status} data-priority={entry.priority}>
                <span className="plan-mark" aria-hidden="true">
                  {MARK[entry.status]}
                </span>
                <span className="plan-content">{entry.content}</span>
                <span className="plan-status">
                  {words(entry.status)}
                  {entry.priority === 'HIGH' && ' · high'}
                </span>
              </li>
            ))}
          </ol>
        </details>
      )}
    </div>
  )
}
