// The summary read model checked against its definition: a full rebuild from the authoritative
// rows (src/store/summary-sources.ts + src/summary/derive.ts), as the projector derives it.
import type { DatabaseProvider } from '../../src/config/config.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { createStore, type Store } from '../../src/store/store.ts'
import { readSummaryRows } from '../../src/store/summaries.ts'
import { loadSummaryInputs } from '../../src/store/summary-sources.ts'
import { deriveSummary } from '../../src/summary/derive.ts'
import { semanticJson } from '../../src/summary/semantic.ts'

/** A store of its own on a database real server processes write (the test process reads it directly). */
export async function summaryStore(databaseUrl: string, provider: DatabaseProvider = 'postgres'): Promise<Store> {
  return createStore(await connectDatabase(provider, databaseUrl))
}

export interface SummaryDrift {
  taskId: string
  stored: string | null
  rebuilt: string | null
}

/**
 * The tasks whose stored summary differs from a rebuild (or that have none). lastActivityAt is a
 * monotonic maximum over the stored value, so the rebuild starts from it, as the projector does.
 */
export async function summaryDrift(store: Store, taskIds: readonly string[]): Promise<SummaryDrift[]> {
  const rows = new Map((await readSummaryRows(store, taskIds)).map((r) => [r.taskId, r]))
  const previous = new Map(
    [...rows].map(([taskId, row]) => {
      const at = (JSON.parse(row.payload) as { lastActivityAt: string | null }).lastActivityAt
      return [taskId, at ? new Date(at) : null]
    }),
  )
  const inputs = await loadSummaryInputs(store, taskIds, previous)
  const drift: SummaryDrift[] = []
  for (const taskId of taskIds) {
    const taskInputs = inputs.get(taskId)
    const rebuilt = taskInputs ? semanticJson(deriveSummary(taskInputs)) : null
    const stored = rows.get(taskId)?.payload ?? null
    if (stored !== rebuilt) drift.push({ taskId, stored, rebuilt })
  }
  return drift
}
