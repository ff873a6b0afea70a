import type { Store } from '../store/store.ts'
import { loadPendingInputs, loadSummaryInputs } from '../store/summary-sources.ts'
import { taskIdsPage, tasksWithoutSummary } from '../store/tasks.ts'
import { insertSummaries, readSummaryRows, toStoredSummary, type SummaryReadRow, type SummaryRow } from '../store/summaries.ts'
import { SUMMARY_DERIVATION_VERSION } from '../summary/derive.ts'
import { taskPending } from '../summary/pending.ts'
import type { StoredSummary } from '../summary/types.ts'
import { ExpiringMap } from '../util/expiring-map.ts'
import { deriveForStorage, lastActivityOf, parseRows, publishRevision, type Derived, type SummaryOutlets } from './derived-summary.ts'

/** How long a workspace found with every summary row is trusted to still have them. */
const COMPLETE_CHECK_MS = 5_000

/**
 * The projector's read path: stored rows served as the read model, their pending fields
 * reconciled, missing or outdated rows rebuilt. Whatever must be rewritten goes through
 * `project`, the write path's serialized projection, so the two never race on a row.
 */
export class SummaryReads {
  /** Workspaces whose tasks all had a summary row when last scanned (ensureWorkspaceRows). */
  readonly #complete: ExpiringMap<string, true>

  constructor(
    private readonly store: Store,
    private readonly outlets: SummaryOutlets,
    private readonly project: (taskId: string) => Promise<void>,
    now?: () => number,
  ) {
    this.#complete = new ExpiringMap({ ttlMs: COMPLETE_CHECK_MS, max: 10_000, ...(now && { now }) })
  }

  /**
   * The read path (boot, tasks, workflow, taskStatusSummaries, Task.statusSummary): the stored
   * rows are the read model. Only their pending fields (pendingAction and its waitingSince) are
   * reconciled, from the bounded projection of open requests; a row whose pending semantics no
   * longer hold is repaired through the serialized path. Missing rows, and rows derived by older
   * rules, are rebuilt from every source. A fixed number of statements whatever the page size or
   * the history.
   */
  async ensure(taskIds: readonly string[]): Promise<Map<string, StoredSummary>> {
    return this.reconcile(taskIds, await readSummaryRows(this.store, taskIds))
  }

  /**
   * ensure() for rows already read (a task page reads them in its own statement, listTasks with
   * summaries): `rows` holds the stored row of each of `taskIds` that has one. The open requests
   * are read only for tasks that have one or whose row claims a pending action: any other row
   * already agrees with them (nothing pending), so a page with nothing open costs no statement here.
   */
  async reconcile(taskIds: readonly string[], rows: readonly SummaryReadRow[]): Promise<Map<string, StoredSummary>> {
    const parsed = parseRows(rows)
    const result = new Map<string, StoredSummary>()
    const current = new Map<string, StoredSummary>()
    const check: string[] = []
    for (const row of rows) {
      const summary = parsed.get(row.taskId)
      if (!summary || row.derivationVersion < SUMMARY_DERIVATION_VERSION) continue
      current.set(row.taskId, summary)
      if (row.openRequests || summary.payload.pendingAction !== null || summary.payload.waitingSince !== null) check.push(row.taskId)
    }
    const rebuild = taskIds.filter((id) => !current.has(id))
    const [rebuilt, pending] = await Promise.all([
      rebuild.length > 0 ? this.#rebuild(rebuild, rows.filter((r) => !current.has(r.taskId))) : new Map<string, StoredSummary>(),
      check.length > 0 ? loadPendingInputs(this.store, check) : new Map<string, never>(),
    ])
    const stale: string[] = []
    for (const [taskId, summary] of current) {
      const now = taskPending(pending.get(taskId) ?? [])
      if (summary.payload.pendingAction === now.pendingAction && summary.payload.waitingSince === now.waitingSince) result.set(taskId, summary)
      else stale.push(taskId)
    }
    for (const [taskId, summary] of rebuilt) result.set(taskId, summary)
    if (stale.length > 0) {
      await Promise.all(stale.map((taskId) => this.project(taskId)))
      for (const row of await readSummaryRows(this.store, stale)) result.set(row.taskId, toStoredSummary(row))
    }
    return result
  }

  /**
   * Creates the summary rows a workspace's tasks lack. Normally there are none: createTask answers
   * once its task's row is projected, and startup reconciliation creates what a crash left out.
   * What remains (a projection the database failed, rows written around the server) is found by
   * a scan of the workspace's tasks, run at most once per COMPLETE_CHECK_MS per workspace: lists
   * ordered by stored summary columns call this before every page, and the scan grows with the
   * workspace.
   */
  async ensureWorkspaceRows(workspaceId: string): Promise<void> {
    if (this.#complete.get(workspaceId)) return
    const missing = await tasksWithoutSummary(this.store, workspaceId)
    if (missing.length > 0) await this.ensure(missing)
    this.#complete.set(workspaceId, true)
  }

  /**
   * Every source of the given tasks loaded in one batch and derived: missing rows are created in
   * one transaction, rows that differ (stale, or derived by older rules) are repaired through the
   * serialized path, rows that agree are returned as they are.
   */
  async #rebuild(taskIds: readonly string[], rows: readonly SummaryRow[]): Promise<Map<string, StoredSummary>> {
    const storedByTask = new Map(rows.map((r) => [r.taskId, r]))
    const parsed = parseRows(rows)
    const inputs = await loadSummaryInputs(this.store, taskIds, lastActivityOf(parsed))
    const result = new Map<string, StoredSummary>()
    const missing: Derived[] = []
    const stale: string[] = []
    for (const [taskId, taskInputs] of inputs) {
      const stored = storedByTask.get(taskId)
      const derived = deriveForStorage(taskInputs, this.outlets)
      if (!derived) {
        const last = parsed.get(taskId)
        if (last) result.set(taskId, last) // the last valid summary stays visible
      } else if (!stored) missing.push(derived)
      else if (stored.payload !== derived.json || !parsed.get(taskId) || stored.derivationVersion < SUMMARY_DERIVATION_VERSION)
        stale.push(taskId)
      else result.set(taskId, parsed.get(taskId)!)
    }
    const updatedAt = this.store.now()
    const inserted = await insertSummaries(
      this.store,
      missing.map((d) => ({
        taskId: d.taskId,
        workspaceId: d.workspaceId,
        payload: d.json,
        updatedAt,
        derivationVersion: SUMMARY_DERIVATION_VERSION,
        attentionRank: d.attentionRank,
        attentionKey: d.attentionKey,
      })),
    )
    if (inserted) {
      for (const d of missing) {
        result.set(d.taskId, { taskId: d.taskId, workspaceId: d.workspaceId, revision: 1, updatedAt, payload: d.payload })
        await publishRevision({ ...d, revision: 1, updatedAt, feedSequence: inserted.get(d.taskId)! }, this.outlets)
      }
    } else stale.push(...missing.map((d) => d.taskId))
    if (stale.length > 0) {
      await Promise.all(stale.map((taskId) => this.project(taskId)))
      for (const row of await readSummaryRows(this.store, stale)) result.set(row.taskId, toStoredSummary(row))
    }
    return result
  }

  /**
   * Startup: every task's summary is re-derived from every source and converges (batches of
   * tasks, oldest id first). It repairs what a crash between a source write and its projection
   * left stale, which reads, trusting stored rows, would not.
   */
  async reconcileAll(batchSize = 500): Promise<number> {
    let after: string | undefined
    let count = 0
    for (;;) {
      const ids = await taskIdsPage(this.store, after, batchSize)
      if (ids.length === 0) return count
      await this.#rebuild(ids, await readSummaryRows(this.store, ids))
      count += ids.length
      after = ids[ids.length - 1]
    }
  }
}
