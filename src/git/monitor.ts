import type { Logger } from '../observability/logger.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import type { Store } from '../store/store.ts'
import { recordGitObservation } from '../store/git-observations.ts'
import { getSession, gitOfSessions } from '../store/sessions.ts'
import { repositoriesOfTasks } from '../store/tasks.ts'
import { observeRepository, type RepositoryObservation } from './observe.ts'
import { OncePerKey } from '../util/once-per-key.ts'

export interface GitMonitorOptions {
  store: Store
  pubsub: PubSub
  logger: Logger
  /** Sessions whose agent runs on this instance: each keeps the slow baseline, subscribers or not. */
  liveSessions: () => Iterable<string>
  now?: () => number
  /** Baseline interval for every running execution. */
  slowMs?: number
  /** Interval for sessions some connection has focused; also the tick of the monitor. */
  fastMs?: number
  /** How one repository is observed (the bench compares the old observation through the same monitor). */
  observe?: typeof observeRepository
}

const SAME = (a: RepositoryObservation, b: RepositoryObservation) =>
  a.additions === b.additions &&
  a.deletions === b.deletions &&
  a.changedFiles === b.changedFiles &&
  a.ahead === b.ahead &&
  a.behind === b.behind &&
  a.comparisonUnavailable === b.comparisonUnavailable

/**
 * Watches the working trees of running sessions with the git CLI. Every live session is observed
 * on the slow baseline; focused sessions on the fast interval; settled sessions keep their last
 * snapshot. Observations are coalesced: only a change is persisted and published. A failed run
 * keeps the last good totals and marks the comparison unavailable, never a clean tree.
 */
export class GitMonitor {
  readonly #focus = new Map<string, string>() // connection → session
  readonly #lastRun = new Map<string, number>()
  readonly #observing = new OncePerKey<void>()
  #timer: NodeJS.Timeout | undefined
  readonly #now: () => number
  readonly slowMs: number
  readonly fastMs: number
  observations = 0

  constructor(private readonly options: GitMonitorOptions) {
    this.#now = options.now ?? Date.now
    this.slowMs = options.slowMs ?? 30_000
    this.fastMs = options.fastMs ?? 3_000
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.tick(), this.fastMs)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer)
    this.#timer = undefined
    await Promise.allSettled(this.#observing.inFlight())
  }

  focus(connectionId: string, sessionId: string): void {
    this.#focus.set(connectionId, sessionId)
  }

  unfocus(connectionId: string): void {
    this.#focus.delete(connectionId)
  }

  /** Focus held for another instance's connections (keys `<instance>/<connection>`), once that instance is gone. */
  unfocusInstance(instanceId: string): void {
    for (const key of this.#focus.keys()) if (key.startsWith(`${instanceId}/`)) this.#focus.delete(key)
  }

  /** Sessions the monitor holds per-session state for (their last run time). */
  get trackedSessions(): number {
    return this.#lastRun.size
  }

  /**
   * One pass: observes the sessions whose interval has elapsed, and forgets sessions that are no
   * longer live (stopped, crashed, deleted, completed by a terminal step), so the per-session
   * table stays as large as the set of running sessions.
   */
  async tick(): Promise<void> {
    const focused = new Set(this.#focus.values())
    const live = new Set(this.options.liveSessions())
    for (const sessionId of this.#lastRun.keys()) if (!live.has(sessionId)) this.#lastRun.delete(sessionId)
    const now = this.#now()
    const due: string[] = []
    for (const sessionId of live) {
      const interval = focused.has(sessionId) ? this.fastMs : this.slowMs
      if (now - (this.#lastRun.get(sessionId) ?? -Infinity) >= interval) due.push(sessionId)
    }
    await Promise.all(due.map((sessionId) => this.observeSession(sessionId).catch(() => undefined)))
  }

  /** Observes every repository of the session now (refreshSessionGit); one run at a time per session. */
  observeSession(sessionId: string): Promise<unknown> {
    return this.#observing.run(sessionId, () => this.#observe(sessionId))
  }

  async #observe(sessionId: string): Promise<void> {
    const { store, logger } = this.options
    this.#lastRun.set(sessionId, this.#now())
    const session = await getSession(store, sessionId)
    const repositories = (await repositoriesOfTasks(store, [session.taskId])).filter((r) => r.localPath)
    const previous = new Map((await gitOfSessions(store, [sessionId])).map((g) => [g.taskRepositoryId, g]))
    let changed = false
    for (const repository of repositories) {
      const last = previous.get(repository.id)
      let observed: RepositoryObservation
      try {
        this.observations++
        const result = await (this.options.observe ?? observeRepository)(repository.localPath!, repository.baseBranch)
        observed =
          result === 'base-unavailable'
            ? { ...(last ?? { additions: 0, deletions: 0, changedFiles: 0, ahead: 0, behind: 0 }), comparisonUnavailable: true }
            : result
      } catch (error) {
        logger.warn({ err: error, sessionId, taskRepositoryId: repository.id, action: 'git.observe' }, 'git observation failed; last totals kept')
        observed = { ...(last ?? { additions: 0, deletions: 0, changedFiles: 0, ahead: 0, behind: 0 }), comparisonUnavailable: true }
      }
      if (last && SAME(last, observed)) continue
      changed = true
      await recordGitObservation(store, {
        sessionId,
        taskRepositoryId: repository.id,
        additions: observed.additions,
        deletions: observed.deletions,
        changedFiles: observed.changedFiles,
        ahead: observed.ahead,
        behind: observed.behind,
        comparisonUnavailable: observed.comparisonUnavailable,
      })
    }
    if (changed)
      await this.options.pubsub.publish('session', sessionId, { type: 'SessionGitUpdated', sessionId }).catch(() => undefined)
  }
}
