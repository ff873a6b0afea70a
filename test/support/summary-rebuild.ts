// What "summaries equal a full rebuild" means to a test outside the server process: the stored
// row of each task beside the payload derived afresh from the authoritative records, through the
// same loader and derivation the projector uses, but with no stored value fed back in (the
// projector passes the stored lastActivityAt as a floor; a rebuild from scratch must not need it).
import { databaseProviderOf } from '../../src/config/config.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { createStore, type Store } from '../../src/store/store.ts'
import { readSummaryRows } from '../../src/store/summaries.ts'
import { loadSummaryInputs } from '../../src/store/summary-sources.ts'
import { deriveSummary } from '../../src/summary/derive.ts'
import { semanticJson } from '../../src/summary/semantic.ts'

/** A store on the database a server process uses (its own connection; close it with `db.$disconnect()`). */
export async function openStore(databaseUrl: string): Promise<Store> {
  return createStore(await connectDatabase(databaseProviderOf(databaseUrl), databaseUrl))
}

export interface SummaryComparison {
  taskId: string
  /** The stored canonical payload and its revision (undefined: no row). */
  stored?: { payload: string; revision: number }
  rebuilt: string
}

/** Each task's stored summary and the one a full rebuild derives now. */
export async function summariesBesideRebuild(store: Store, taskIds: readonly string[]): Promise<SummaryComparison[]> {
  const [rows, inputs] = await Promise.all([readSummaryRows(store, taskIds), loadSummaryInputs(store, taskIds)])
  const stored = new Map(rows.map((r) => [r.taskId, { payload: r.payload, revision: r.revision }]))
  return taskIds.map((taskId) => ({ taskId, stored: stored.get(taskId), rebuilt: semanticJson(deriveSummary(inputs.get(taskId)!)) }))
}

/** The tasks whose stored summary differs from a rebuild, or that have none. */
export async function summaryDrift(store: Store, taskIds: readonly string[]): Promise<SummaryComparison[]> {
  return (await summariesBesideRebuild(store, taskIds)).filter((c) => c.stored?.payload !== c.rebuilt)
}
