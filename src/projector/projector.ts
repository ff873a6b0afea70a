import type { Logger } from '../observability/logger.ts'
import type { Metrics } from '../observability/metrics.ts'
import { tracing, type StageContext } from '../observability/tracing.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import type { Store } from '../store/store.ts'
import { isDatabaseUnavailable } from '../store/db.ts'
import { loadSummaryInputs } from '../store/summary-sources.ts'
import { compareAndUpdateSummary, markDerivationVersion, readSummaryRows, type SummaryReadRow, type SummaryRow } from '../store/summaries.ts'
import { SUMMARY_DERIVATION_VERSION } from '../summary/derive.ts'
import type { StoredSummary } from '../summary/types.ts'
import { CoalescingRunner } from './coalescing-runner.ts'
import { deriveForStorage, lastActivityOf, parseRows, publishRevision, type Derived, type SummaryOutlets } from './derived-summary.ts'
import { SummaryReads } from './summary-reads.ts'

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

/**
 * The only writer of task_status_summaries. For a task it loads the stored row, then every
 * authoritative source, derives, and compares-and-sets; on rejection it reloads and tries again.
 * Publishes TaskStatusSummaryUpdated only when the revision advanced.
 */
export class Projector {
  readonly #store: Store
  readonly #logger: Logger
  readonly #metrics: Metrics
  readonly #outlets: SummaryOutlets
  readonly #reads: SummaryReads
  readonly #maxAttempts: number
  readonly #runner: CoalescingRunner<string>
  #stopListening?: () => void
  readonly #retryMs: number
  /** Tasks whose projection the database failed (unreachable, saturated): projected again once it answers. */
  readonly #retry = new Set<string>()
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  #retryDelay = 0
  #stopped = false

  constructor(options: ProjectorOptions) {
    this.#store = options.store
    this.#logger = options.logger
    this.#metrics = options.metrics
    this.#maxAttempts = options.maxAttempts ?? 8
    this.#retryMs = options.retryMs ?? 500
    this.#runner = new CoalescingRunner((taskId) =>
      tracing.on ? tracing.stages.projection(taskId, (trace) => this.#projectNow(taskId, trace)) : this.#projectNow(taskId),
    )
    this.#outlets = { pubsub: options.pubsub, logger: options.logger, metrics: options.metrics }
    this.#reads = new SummaryReads(options.store, this.#outlets, (taskId) => this.project(taskId), options.now)
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

  async #projectNow(taskId: string, trace?: StageContext): Promise<void> {
    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      // Stored row first, sources second: a source write that lands in between triggers a later projection.
      const [stored] = await readSummaryRows(this.#store, [taskId])
      const inputs = (await loadSummaryInputs(this.#store, [taskId], lastActivityOf(parseRows(stored ? [stored] : [])))).get(taskId)
      if (!inputs) return // the task is gone
      const derived = deriveForStorage(inputs, this.#outlets)
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
      if (await this.#write(derived, stored, trace)) return
      this.#metrics.projectorRetries.inc()
      this.#logger.debug({ taskId, attempt }, 'summary compare-and-update rejected; rebasing')
    }
    this.#metrics.projectorFailures.inc({ reason: 'contention' })
    this.#logger.error({ taskId, attempts: this.#maxAttempts }, 'summary projection gave up after repeated contention')
  }

  /** One compare-and-update; publishes the new revision when it was written. */
  async #write(derived: Derived, stored: SummaryRow | undefined, trace?: StageContext): Promise<boolean> {
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
    if (written) await publishRevision({ ...derived, revision: (stored?.revision ?? 0) + 1, updatedAt, feedSequence: written.feedSequence }, this.#outlets, trace)
    return written !== null
  }

  /**
   * The read path (boot, tasks, workflow, taskStatusSummaries, Task.statusSummary): the stored
   * rows are the read model, their pending fields reconciled (summary-reads.ts).
   */
  ensure(taskIds: readonly string[]): Promise<Map<string, StoredSummary>> {
    return this.#reads.ensure(taskIds)
  }

  /** ensure() for rows already read (a task page reads them in its own statement). */
  reconcile(taskIds: readonly string[], rows: readonly SummaryReadRow[]): Promise<Map<string, StoredSummary>> {
    return this.#reads.reconcile(taskIds, rows)
  }

  /** Creates the summary rows a workspace's tasks lack (scanned at most every few seconds per workspace). */
  ensureWorkspaceRows(workspaceId: string): Promise<void> {
    return this.#reads.ensureWorkspaceRows(workspaceId)
  }

  /** Startup: every task's summary is re-derived from every source and converges. */
  reconcileAll(batchSize = 500): Promise<number> {
    return this.#reads.reconcileAll(batchSize)
  }
}
