import type { FormattedExecutionResult, GraphQLFormattedError } from 'graphql'
import type { StoreApi } from 'zustand/vanilla'
import { ClientBootDocument, ClientTaskRowDocument, ClientTasksPageDocument, ClientWorkspaceEventsDocument, type ClientWorkspaceEventsSubscription } from './generated/graphql.js'
import { errorCode, TaskClientError } from './errors.js'
import type { Requests } from './requests.js'
import { backoffMs } from './socket-policy.js'
import { applyBoot, applyFeedEvent, applyTaskPayloads, failBoot, initialSummaryState, isUnknownTask, startBoot, startResync } from './summary-store.js'
import type { SubscriptionHandle } from './transport.js'
import type { SummaryState, TaskRowPayload } from './types.js'

type FeedResult = FormattedExecutionResult<ClientWorkspaceEventsSubscription, unknown>

/**
 * The task switcher's state machine: boot a workspace (every page of tasks), then follow its
 * workspaceEvents after boot.feedCursor, resubscribing from the latest cursor after a socket
 * close, retrying a subscription the server ended, and booting again on WorkspaceResync. Every
 * answer lands in the summary store; one for a workspace opened before the current one is dropped.
 */
export class WorkspaceFeed {
  #workspaceId: string | null = null
  /** Bumped by open: answers for an earlier workspace are dropped. */
  #epoch = 0
  /** Booted: the feed is subscribed whenever a socket is connected. */
  #following = false
  #handle: SubscriptionHandle | null = null
  /** Identity of the live subscription (its callbacks compare against it). */
  #token: object | null = null
  /** Consecutive resyncs with no other event between them (a repeated one waits). */
  #resyncStreak = 0
  /** Consecutive feed subscriptions that ended without a socket close. */
  #retries = 0
  #retryTimer: unknown
  /** Rows read because a delta named a task the store lacks, by task id. */
  readonly #rowReads = new Set<string>()

  constructor(
    private readonly summaries: StoreApi<SummaryState>,
    private readonly requests: Requests,
    private readonly pageSize: number,
  ) {}

  /** Resolves once the rows are in the store; a call superseded by a later one resolves quietly. */
  async open(workspaceId: string): Promise<void> {
    this.requests.assertUsable()
    const epoch = ++this.#epoch
    this.#stop()
    this.#workspaceId = workspaceId
    this.#resyncStreak = 0
    this.#rowReads.clear()
    this.#setSummaries(startBoot(this.summaries.getState(), workspaceId))
    try {
      await this.#boot(epoch)
    } catch (error) {
      // Superseded by another open (or dispose): that call reports; this one just ends.
      if (epoch !== this.#epoch || this.requests.disposed) return
      this.#setSummaries(failBoot(this.summaries.getState()))
      throw error
    }
  }

  /** A socket was acknowledged: a booted feed follows on from the latest cursor. */
  subscribe(): void {
    if (!this.#following || this.#handle || this.requests.disposed || this.#retryTimer !== undefined || !this.#workspaceId) return
    const token = {}
    const handle = this.requests.transport.subscribe(
      ClientWorkspaceEventsDocument,
      { workspaceId: this.#workspaceId, after: this.summaries.getState().cursor },
      {
        next: (result) => this.#onResult(token, result),
        error: (errors) => this.#onEnded(token, errors),
        complete: () => this.#onEnded(token, undefined),
      },
    )
    if (!handle) return
    this.#handle = handle
    this.#token = token
  }

  /** The socket closed and took the subscription with it. */
  disconnected(): void {
    this.#handle = null
    this.#token = null
  }

  dispose(): void {
    this.#epoch++
    this.#stop()
    this.#workspaceId = null
    this.#rowReads.clear()
    this.#setSummaries(initialSummaryState())
  }

  tableSizes() {
    return { feedSubscriptions: this.#handle ? 1 : 0, rowReads: this.#rowReads.size, feedTimers: this.#retryTimer !== undefined ? 1 : 0 }
  }

  #setSummaries(state: SummaryState): void {
    this.summaries.setState(state, true)
  }

  #stop(): void {
    this.#handle?.close()
    this.#handle = null
    this.#token = null
    this.#following = false
    if (this.#retryTimer !== undefined) this.requests.timers.clear(this.#retryTimer)
    this.#retryTimer = undefined
  }

  /** Reads boot and every further page, applies them as one replacement, then follows the feed after boot.feedCursor. */
  async #boot(epoch: number): Promise<void> {
    const workspaceId = this.#workspaceId!
    const { requests, pageSize } = this
    const current = () => epoch === this.#epoch && !requests.disposed
    // A boot is retried for as long as it is wanted: a switcher without it shows nothing.
    const { boot } = await requests.query(ClientBootDocument, { workspaceId, first: pageSize }, current)
    const tasks: TaskRowPayload[] = boot.tasks.edges.map((e) => e.node)
    let page = boot.tasks.pageInfo
    while (page.hasNextPage && page.endCursor && current()) {
      const next = await requests.query(ClientTasksPageDocument, { workspaceId, first: pageSize, after: page.endCursor }, current)
      tasks.push(...next.tasks.edges.map((e) => e.node))
      page = next.tasks.pageInfo
    }
    if (!current()) return
    this.#setSummaries(applyBoot(this.summaries.getState(), workspaceId, boot.feedCursor, tasks))
    this.#following = true
    this.subscribe()
  }

  #onResult(token: object, result: FeedResult): void {
    if (this.#token !== token) return
    if (result.errors?.length || !result.data) {
      this.#handle?.close()
      return this.#onEnded(token, result.errors ?? [])
    }
    const event = result.data.workspaceEvents
    if (event.__typename === 'WorkspaceResync') return this.#resync(event.reason)
    this.#resyncStreak = 0
    this.#retries = 0
    const state = this.summaries.getState()
    if (isUnknownTask(state, event)) this.#readRow(event.taskId)
    this.#setSummaries(applyFeedEvent(state, event))
  }

  /** The server ended the subscription: a bad cursor resyncs, a refusal stops following, anything else retries. */
  #onEnded(token: object, errors: readonly GraphQLFormattedError[] | undefined): void {
    if (this.#token !== token) return
    this.#handle = null
    this.#token = null
    const code = errors ? errorCode(errors) : undefined
    this.requests.emit({
      type: 'subscription-error',
      operation: 'workspaceEvents',
      id: this.#workspaceId ?? '',
      code,
      message: errors?.map((e) => e.message).join('; ') || 'completed by the server',
    })
    if (code === 'BAD_USER_INPUT') return this.#resync('bad-cursor')
    if (code === 'FORBIDDEN' || code === 'NOT_FOUND' || code === 'UNAUTHENTICATED') {
      this.#following = false
      return
    }
    this.#retryTimer = this.requests.timers.set(
      () => {
        this.#retryTimer = undefined
        this.subscribe()
      },
      backoffMs(Math.min(this.#retries++, 6), this.requests.random),
    )
  }

  /** WorkspaceResync: boot again, then follow on from its feedCursor (a repeated resync waits first). */
  #resync(reason: string): void {
    const { requests } = this
    const workspaceId = this.#workspaceId!
    const epoch = this.#epoch
    requests.emit({ type: 'resync', scope: 'workspace', workspaceId, reason })
    this.#stop()
    this.#setSummaries(startResync(this.summaries.getState()))
    const streak = this.#resyncStreak++
    const run = async () => {
      if (streak > 0) await requests.sleep(backoffMs(Math.min(streak - 1, 6), requests.random))
      if (epoch !== this.#epoch || requests.disposed) return
      await this.#boot(epoch)
    }
    run().catch((error: unknown) => {
      if (epoch !== this.#epoch || requests.disposed) return
      this.#setSummaries(failBoot(this.summaries.getState()))
      requests.emit({
        type: 'subscription-error',
        operation: 'workspaceEvents',
        id: workspaceId,
        code: error instanceof TaskClientError ? error.code : undefined,
        message: error instanceof Error ? error.message : String(error),
      })
    })
  }

  /** A summary delta for a task the store lacks (moved between boot pages): read its row. */
  #readRow(taskId: string): void {
    if (this.#rowReads.has(taskId)) return
    this.#rowReads.add(taskId)
    const epoch = this.#epoch
    this.requests
      .query(ClientTaskRowDocument, { id: taskId })
      .then(({ task }) => {
        if (task && epoch === this.#epoch && !this.requests.disposed) this.#setSummaries(applyTaskPayloads(this.summaries.getState(), task.workspaceId, [task]))
      })
      .catch(() => undefined)
      .finally(() => this.#rowReads.delete(taskId))
  }
}
