import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import type { Store } from '../store/store.ts'
import { isDatabaseUnavailable } from '../store/db.ts'
import { loadPendingInputs, loadSummaryInputs } from '../store/summary-sources.ts'
import { taskIdsPage, tasksWithoutSummary } from '../store/tasks.ts'
import {
  compareAndUpdateSummary,
  insertSummaries,
  markDerivationVersion,
  readSummaryRows,
  toStoredSummary,
  type SummaryReadRow,
  type SummaryRow,
} from '../store/summaries.ts'
import { deriveSummary, SUMMARY_DERIVATION_VERSION } from '../summary/derive.ts'
import { taskPending } from '../summary/pending.ts'
import { attentionOrder } from '../summary/attention.ts'
import { InvalidSummaryError, semanticJson, validateSummary } from '../summary/semantic.ts'
import type { StoredSummary, SummaryPayload } from '../summary/types.ts'
import { CoalescingRunner } from './coalescing-runner.ts'
import { ExpiringMap } from '../util/expiring-map.ts'

export interface ProjectorOptions {
  store: Store
  pubsub: PubSub
  logger: Logger
  metrics: Metrics
  /** Compare-and-update attempts per projection before giving up (logged and metered). */
  maxAttempts?: number
  /** First wait before projecting again what an unreachable or saturated database failed (doubling up to 16 times it). */
  retryMs?: number
  /** The monotonic clock of the workspace-rows check (tests inject one). */
  now?: () => number
}

/** How long a workspace found with every summary row is trusted to still have them. */
const COMPLETE_CHECK_MS = 5_000

type Derived = { taskId: string; workspaceId: string; payload: SummaryPayload; json: string; attentionRank: number; attentionKey: number }

/**
 * The only writer of task_status_summaries. For a task it loads the stored row, then every
 * authoritative source, derives, and compares-and-sets; on rejection it reloads and tries again.
 * Publishes TaskStatusSummaryUpdated only when the revision advanced.
 */
export class Projector {
  readonly #store: Store
  readonly #pubsub: PubSub
  readonly #logger: Logger
  readonly #metrics: Metrics
  readonly #maxAttempts: number
  readonly #runner: CoalescingRunner<string>
  #stopListening?: () => void
  readonly #retryMs: number
  /** Tasks whose projection the database failed (unreachable, saturated): projected again once it answers. */
  readonly #retry = new Set<string>()
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  #retryDelay = 0
  #stopped = false
  /** Workspaces whose tasks all had a summary row when last scanned (ensureWorkspaceRows). */
  readonly #complete: ExpiringMap<string, true>

  constructor(options: ProjectorOptions) {
    this.#store = options.store
    this.#pubsub = options.pubsub
    this.#logger = options.logger
    this.#metrics = options.metrics
    this.#maxAttempts = options.maxAttempts ?? 8
    this.#retryMs = options.retryMs ?? 500
    this.#runner = new CoalescingRunner((taskId) => this.#projectNow(taskId))
    this.#complete = new ExpiringMap({ ttlMs: COMPLETE_CHECK_MS, max: 10_000, ...(options.now && { now: options.now }) })
  }

  /** Consumes the store's source events (never agent streams). */
  start(): void {
    this.#stopListening = this.#store.events.on((event) => {
      if (event.kind === 'task.deleted') return // the summary row goes with the task
      void this.project(event.taskId)
    })
  }

  stop(): void {
    this.#stopped = true
    this.#stopListening?.()
    clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
  }

  /**
   * Re-derives one task's summary; serialized per task, other tasks proceed independently. A
   * projection the database failed (an outage: its source write was committed, its summary not)
   * is tried again, with growing pauses, until the database answers: the stored summary then
   * equals a rebuild without waiting for the task's next source event.
   */
  project(taskId: string): Promise<void> {
    return this.#runner.request(taskId).then(
      () => void this.#retry.delete(taskId),
      (error: unknown) => {
        this.#metrics.projectorFailures.inc({ reason: 'error' })
        if (isDatabaseUnavailable(error) && !this.#stopped) {
          this.#logger.warn({ err: error, taskId, action: 'project' }, 'summary projection failed (database unavailable); retrying')
          this.#retry.add(taskId)
          this.#scheduleRetry()
        } else this.#logger.error({ err: error, taskId, action: 'project' }, 'summary projection failed; last valid summary kept')
      },
    )
  }

  /** Tasks waiting for their projection to be tried again (the database failed it). */
  get pendingRetries(): number {
    return this.#retry.size
  }

  #scheduleRetry(): void {
    if (this.#retryTimer !== undefined) return
    this.#retryDelay = Math.min(this.#retryDelay === 0 ? this.#retryMs : this.#retryDelay * 2, this.#retryMs * 16)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      const taskIds = [...this.#retry]
      this.#retry.clear()
      void Promise.all(taskIds.map((taskId) => this.project(taskId))).then(() => {
        // All of them went through: the next outage starts from the shortest pause again.
        if (this.#retry.size === 0) this.#retryDelay = 0
      })
    }, this.#retryDelay)
  }

  /** Waits until no projection is running (tests, shutdown, readiness). */
  idle(): Promise<void> {
    return this.#runner.idle()
  }

  #derive(inputs: Parameters<typeof deriveSummary>[0]): Derived | undefined {
    const payload = deriveSummary(inputs)
    try {
      validateSummary(payload)
    } catch (error) {
      if (!(error instanceof InvalidSummaryError)) throw error
      this.#metrics.projectorFailures.inc({ reason: 'invalid' })
      this.#logger.error({ taskId: inputs.task.id, reason: error.message }, 'derived an invalid summary; not stored')
      return undefined
    }
    const order = attentionOrder(payload)
    return {
      taskId: inputs.task.id,
      workspaceId: inputs.task.workspaceId,
      payload,
      json: semanticJson(payload),
      attentionRank: order.rank,
      attentionKey: order.key,
    }
  }

  async #projectNow(taskId: string): Promise<void> {
    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      // Stored row first, sources second: a source write that lands in between triggers a later projection.
      const [stored] = await readSummaryRows(this.#store, [taskId])
      const inputs = (await loadSummaryInputs(this.#store, [taskId], lastActivityOf(parseRows(stored ? [stored] : [])))).get(taskId)
      if (!inputs) return // the task is gone
      const derived = this.#derive(inputs)
      if (!derived) return
      if (stored && stored.payload === derived.json) {
        if (stored.derivationVersion < SUMMARY_DERIVATION_VERSION)
          await markDerivationVersion(this.#store, taskId, stored.revision, {
            derivationVersion: SUMMARY_DERIVATION_VERSION,
            attentionRank: derived.attentionRank,
            attentionKey: derived.attentionKey,
          })
        this.#metrics.projectorNoops.inc()
        return
      }
      if (await this.#write(derived, stored)) return
      this.#metrics.projectorRetries.inc()
      this.#logger.debug({ taskId, attempt }, 'summary compare-and-update rejected; rebasing')
    }
    this.#metrics.projectorFailures.inc({ reason: 'contention' })
    this.#logger.error({ taskId, attempts: this.#maxAttempts }, 'summary projection gave up after repeated contention')
  }

  /** One compare-and-update; publishes the new revision when it was written. */
  async #write(derived: Derived, stored: SummaryRow | undefined): Promise<boolean> {
    const updatedAt = this.#store.now()
    const written = await compareAndUpdateSummary(this.#store, {
      taskId: derived.taskId,
      workspaceId: derived.workspaceId,
      expectedRevision: stored?.revision ?? null,
      payload: derived.json,
      updatedAt,
      derivationVersion: SUMMARY_DERIVATION_VERSION,
      attentionRank: derived.attentionRank,
      attentionKey: derived.attentionKey,
    })
    if (written) await this.#published({ ...derived, revision: (stored?.revision ?? 0) + 1, updatedAt, feedSequence: written.feedSequence })
    return written !== null
  }

  async #published(summary: Derived & { revision: number; updatedAt: Date; feedSequence: number }): Promise<void> {
    this.#metrics.projectorRevisions.inc()
    try {
      await this.#pubsub.publish('workspace', summary.workspaceId, {
        type: 'TaskStatusSummaryUpdated',
        workspaceId: summary.workspaceId,
        taskId: summary.taskId,
        revision: summary.revision,
        updatedAt: summary.updatedAt.toISOString(),
        summary: summary.payload,
        sequence: summary.feedSequence,
      })
    } catch (error) {
      // At-most-once delivery: the stored revision is what reconnecting clients read.
      this.#logger.warn({ err: error, taskId: summary.taskId }, 'summary publish failed')
    }
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
    return this.reconcile(taskIds, await readSummaryRows(this.#store, taskIds))
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
      check.length > 0 ? loadPendingInputs(this.#store, check) : new Map<string, never>(),
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
      for (const row of await readSummaryRows(this.#store, stale)) result.set(row.taskId, toStoredSummary(row))
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
    const missing = await tasksWithoutSummary(this.#store, workspaceId)
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
    const inputs = await loadSummaryInputs(this.#store, taskIds, lastActivityOf(parsed))
    const result = new Map<string, StoredSummary>()
    const missing: Derived[] = []
    const stale: string[] = []
    for (const [taskId, taskInputs] of inputs) {
      const stored = storedByTask.get(taskId)
      const derived = this.#derive(taskInputs)
      if (!derived) {
        const last = parsed.get(taskId)
        if (last) result.set(taskId, last) // the last valid summary stays visible
      } else if (!stored) missing.push(derived)
      else if (stored.payload !== derived.json || !parsed.get(taskId) || stored.derivationVersion < SUMMARY_DERIVATION_VERSION)
        stale.push(taskId)
      else result.set(taskId, parsed.get(taskId)!)
    }
    const updatedAt = this.#store.now()
    const inserted = await insertSummaries(
      this.#store,
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
        await this.#published({ ...d, revision: 1, updatedAt, feedSequence: inserted.get(d.taskId)! })
      }
    } else stale.push(...missing.map((d) => d.taskId))
    if (stale.length > 0) {
      await Promise.all(stale.map((taskId) => this.project(taskId)))
      for (const row of await readSummaryRows(this.#store, stale)) result.set(row.taskId, toStoredSummary(row))
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
      const ids = await taskIdsPage(this.#store, after, batchSize)
      if (ids.length === 0) return count
      await this.#rebuild(ids, await readSummaryRows(this.#store, ids))
      count += ids.length
      after = ids[ids.length - 1]
    }
  }
}

/** Stored rows parsed once; a row whose payload cannot be read maps to undefined (it gets repaired). */
function parseRows(rows: readonly SummaryRow[]): Map<string, StoredSummary | undefined> {
  return new Map(
    rows.map((r) => {
      try {
        return [r.taskId, toStoredSummary(r)]
      } catch {
        return [r.taskId, undefined]
      }
    }),
  )
}

function lastActivityOf(parsed: Map<string, StoredSummary | undefined>): Map<string, Date | null> {
  return new Map(
    [...parsed].map(([taskId, summary]) => {
      const at = summary?.payload.lastActivityAt
      return [taskId, at ? new Date(at) : null]
    }),
  )
}
