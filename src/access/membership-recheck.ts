import { Semaphore } from 'async-mutex'
import type { Scheduler } from '../util/scheduler.ts'

export interface MembershipRecheckDeps {
  /** How stale a membership an open subscription relies on may be (the access cache's bound). */
  boundMs: number
  now: () => number
  timers: Scheduler
  /** Reads the membership from the database, whatever is cached. */
  read(userId: string, workspaceId: string): Promise<boolean>
  /** The membership is gone: end what it allowed (the same path as a `membership-removed` event). */
  gone(userId: string, workspaceId: string): void
  /** A read failed (the database is down or saturated): the pair is tried again after `retryMs`. */
  failed(error: unknown): void
  retryMs?: number
  /** Reads in flight at once, so a burst of due pairs (after a pub/sub gap) does not take the whole pool. */
  concurrency?: number
}

interface Pair {
  userId: string
  workspaceId: string
  /** Open holders relying on it; the pair is dropped at 0. */
  holders: number
  /** When it must have been read again (its last confirming read's start + the bound). */
  dueAt: number
  reading: boolean
}

/**
 * Keeps the memberships open subscriptions rely on no staler than the bound, for memberships
 * removed without the API (a database edit, a restore), which no `membership-removed` event
 * reports. One entry per user/workspace pair, however many subscriptions share it, and one timer
 * for all pairs, armed only while there are any: a pair is read again by its last confirming
 * read + the bound (a read an operation made counts), so an instance costs one read per pair per
 * bound, and a removal is noticed at most a bound (plus the read) after it.
 */
export class MembershipRecheck {
  readonly #pairs = new Map<string, Pair>()
  readonly #retryMs: number
  /** Reads in flight at once: a burst of due pairs (after a pub/sub gap) waits its turn here. */
  readonly #reads: Semaphore
  /**
   * Pairs due this much after the one that fires the timer are read with it: one wake-up per
   * slack at most, however many pairs (a pair is read at most this much before its bound).
   */
  readonly #slackMs: number
  #timer: unknown
  #timerAt = Infinity
  #stopped = false

  constructor(private readonly deps: MembershipRecheckDeps) {
    this.#retryMs = deps.retryMs ?? Math.min(1_000, deps.boundMs)
    this.#reads = new Semaphore(deps.concurrency ?? 8)
    this.#slackMs = deps.boundMs / 20
  }

  /** Pairs tracked now (tests prove every release frees its entry). */
  get size(): number {
    return this.#pairs.size
  }

  /** Whether the timer is armed (tests prove it goes with the last pair). */
  get armed(): boolean {
    return this.#timer !== undefined
  }

  /** A holder relies on the pair; `verifiedAt` is when the read its check relied on began. */
  track(userId: string, workspaceId: string, verifiedAt: number): void {
    const key = keyOf(userId, workspaceId)
    const pair = this.#pairs.get(key)
    if (pair) {
      pair.holders++
      return
    }
    const dueAt = verifiedAt + this.deps.boundMs
    this.#pairs.set(key, { userId, workspaceId, holders: 1, dueAt, reading: false })
    this.#armFor(dueAt)
  }

  /** One holder of the pair is gone; the last one takes the entry with it. */
  untrack(userId: string, workspaceId: string): void {
    const key = keyOf(userId, workspaceId)
    const pair = this.#pairs.get(key)
    if (!pair || --pair.holders > 0) return
    this.#pairs.delete(key)
    if (this.#pairs.size === 0) this.#disarm()
  }

  /** A read begun at `at` found the membership: the pair's next read can wait until `at` + the bound. */
  confirmed(userId: string, workspaceId: string, at: number): void {
    const pair = this.#pairs.get(keyOf(userId, workspaceId))
    if (pair) pair.dueAt = Math.max(pair.dueAt, at + this.deps.boundMs)
  }

  /** Every pair is read again now (events may have been missed). */
  recheckAll(): void {
    const now = this.deps.now()
    for (const pair of this.#pairs.values()) pair.dueAt = Math.min(pair.dueAt, now)
    if (this.#pairs.size > 0) this.#armFor(now)
  }

  /** No more reads (the server is stopping); what is tracked is forgotten. */
  stop(): void {
    this.#stopped = true
    // Reads still waiting their turn find their pair untracked and do nothing.
    this.#pairs.clear()
    this.#disarm()
  }

  /** Reads every pair due within the slack (at most `concurrency` at once), and sets the timer for the earliest of the others. */
  readonly #tick = (): void => {
    this.#timer = undefined
    this.#timerAt = Infinity
    const horizon = this.deps.now() + this.#slackMs
    let earliest = Infinity
    for (const pair of this.#pairs.values()) {
      if (pair.reading) continue
      if (pair.dueAt <= horizon) {
        pair.reading = true
        this.#reads.runExclusive(() => this.#read(pair)).catch((error: unknown) => this.#report(error))
      } else earliest = Math.min(earliest, pair.dueAt)
    }
    if (earliest < Infinity) this.#armFor(earliest)
  }

  async #read(pair: Pair): Promise<void> {
    // Released while it waited its turn: no read for nobody.
    if (!this.#isTracked(pair)) return void (pair.reading = false)
    const startedAt = this.deps.now()
    let member: boolean | undefined
    try {
      member = await this.deps.read(pair.userId, pair.workspaceId)
    } catch (error) {
      this.#report(error)
    }
    pair.reading = false
    // Released (and perhaps tracked anew) meanwhile: this read is nobody's any more.
    if (this.#isTracked(pair)) {
      if (member === undefined) pair.dueAt = this.deps.now() + this.#retryMs
      else if (member) pair.dueAt = Math.max(pair.dueAt, startedAt + this.deps.boundMs)
      else this.#end(pair)
    }
    if (this.#isTracked(pair)) this.#armFor(pair.dueAt)
  }

  #end(pair: Pair): void {
    try {
      this.deps.gone(pair.userId, pair.workspaceId)
    } catch (error) {
      this.#report(error)
    }
    // `gone` released every holder of the pair, which took the entry; one left over (it should
    // not be) is read again a bound later, not in a loop.
    pair.dueAt = this.deps.now() + this.deps.boundMs
  }

  #isTracked(pair: Pair): boolean {
    return this.#pairs.get(keyOf(pair.userId, pair.workspaceId)) === pair
  }

  #report(error: unknown): void {
    try {
      this.deps.failed(error)
    } catch {
      // Reporting must not stop the re-checks.
    }
  }

  /** The timer set for `at`, unless it fires by then already (then the tick finds the pair due). */
  #armFor(at: number): void {
    if (this.#stopped || (this.#timer !== undefined && this.#timerAt <= at)) return
    this.#disarm()
    this.#timerAt = at
    const timer = this.deps.timers.setTimeout(this.#tick, Math.max(0, at - this.deps.now()))
    // A re-check never keeps a process alive that has nothing else to do.
    ;(timer as { unref?: () => void } | undefined)?.unref?.()
    this.#timer = timer
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.deps.timers.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerAt = Infinity
  }
}

const keyOf = (userId: string, workspaceId: string) => `${userId} ${workspaceId}`
