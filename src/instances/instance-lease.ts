import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type { Logger } from '../observability/logger.ts'
import { errorFields } from '../observability/error-fields.ts'
import type { Store } from '../store/store.ts'
import { expireInstance, reacquireInstance, registerInstance, renewInstance, sessionsLostBy } from '../store/instances.ts'
import type { Scheduler } from '../util/scheduler.ts'
import { FENCE_MARGIN, heartbeatIntervalMs, renewalRetryMs, WATCHDOG_MARGIN } from './lease-timing.ts'

/** Renewal attempts per heartbeat on SQLite (exclusive), where no fence bounds them. */
const EXCLUSIVE_ATTEMPTS = 5

/** Readable in logs, unique per process start: a restarted server is a new instance. */
export function newInstanceId(): string {
  return `${hostname().slice(0, 40)}-${process.pid}-${randomBytes(3).toString('hex')}`
}

export interface LeaseHooks {
  /** Sessions whose agents run here: checked against the database after each renewal. */
  runningSessions(): string[]
  /** Another instance owns these now: their agents must end here without writing. */
  abandon(sessionIds: string[]): Promise<void>
  /** The lease lapsed (this process stalled or lost the database): every agent here must end. */
  leaseLost(): Promise<void>
  /** After a lapse the lease is taken anew: sessions still owned here have no agent any more and are recovered. */
  recoverOwned(): Promise<void>
  /** Runs after each renewal: taking over the sessions of instances whose leases expired. */
  afterRenewal(): Promise<void>
}

/** Where the lease's deadlines go: the agent watchdog (src/agents/watchdog/agent-watchdog.ts). */
export interface LeaseDeadlines {
  /** Agents must be gone by `ms` from now unless a later deadline arrives; null: never. */
  deadline(ms: number | null): void
}

/**
 * This instance's lease: registered at start, renewed every sixth of SESSION_LEASE_MS (every
 * half on SQLite, where no fence depends on it: lease-timing.ts) with one statement, whatever the
 * number of sessions, and ended at once on a graceful shutdown so others
 * take the sessions over without waiting for it to lapse.
 *
 * Fencing: every grant (registration, renewal) is timed on this process's monotonic clock from
 * just before its statement, so the lease here never outlives the row other instances read. A
 * failed renewal is retried every quarter second or so up to the fence (lease-timing.ts: an outage
 * of up to half the lease, whenever it begins, costs no session); if none succeeds, the agents here
 * end a fifth of the lease before it could expire (`leaseLost`), and the watchdog, told each
 * deadline, ends them a little later should this process be stalled and unable to. Renewals never
 * wait for the maintenance pass (takeovers), so a slow takeover cannot cost the lease. With
 * `exclusive` (SQLite, whose file lock proves this server alone) the lease never expires while the
 * process lives.
 */
export class InstanceLease {
  #timer: unknown
  #fenceTimer: unknown
  #renewing: Promise<boolean | undefined> | undefined
  #maintaining: Promise<void> | undefined
  #stopped = false
  /** When the lease last granted would expire, on this instance's monotonic clock. */
  #validUntil = 0
  /** The agents here ended (fence or lapse) while sessions may still be ours: their open work is recovered next. */
  #fenced = false
  readonly #timers: Scheduler
  readonly #monotonic: () => number

  constructor(
    readonly instanceId: string,
    private readonly deps: {
      store: Store
      logger: Logger
      leaseMs: number
      hooks: LeaseHooks
      timers?: Scheduler
      /** This process's monotonic clock in ms (performance.now): a wall-clock jump moves no deadline. */
      monotonic?: () => number
      deadlines?: LeaseDeadlines
      /** No other instance can exist (SQLite's lock): the lease never expires while this process lives. */
      exclusive?: boolean
    },
  ) {
    this.#timers = deps.timers ?? { setTimeout: (fn, ms) => setTimeout(fn, ms).unref(), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) }
    this.#monotonic = deps.monotonic ?? (() => performance.now())
  }

  /** The last grant still holds by this instance's clock (false: another instance may be taking over). */
  get valid(): boolean {
    return this.deps.exclusive === true || this.#monotonic() < this.#validUntil
  }

  get intervalMs(): number {
    return heartbeatIntervalMs(this.deps.leaseMs, this.deps.exclusive === true)
  }

  async register(): Promise<void> {
    const startedAt = this.#monotonic()
    await registerInstance(this.deps.store, this.instanceId, this.deps.leaseMs)
    this.#granted(startedAt)
  }

  start(): void {
    this.#schedule()
  }

  /**
   * One heartbeat: renew (or notice the lease lapsed), then the maintenance pass (recover what a
   * fence or lapse left, drop sessions taken over elsewhere, take over expired ones).
   */
  async tick(): Promise<void> {
    const renewed = await this.#renewal()
    await this.#maintenance(renewed)
  }

  /** Renewals never overlap. */
  #renewal(): Promise<boolean | undefined> {
    this.#renewing ??= this.#renewOrReacquire().finally(() => (this.#renewing = undefined))
    return this.#renewing
  }

  async #renewOrReacquire(): Promise<boolean | undefined> {
    const renewed = await this.#renew()
    if (renewed !== false) return renewed
    if (!this.deps.exclusive) {
      this.deps.logger.warn({ action: 'instance.lease_lost' }, 'the lease lapsed before it was renewed; agents here end, the lease is taken anew')
      await this.deps.hooks.leaseLost()
      this.#fenced = true
    }
    // Alone on the file (exclusive), a lapse is only this process having been slow: nothing ends.
    await this.#reacquire()
    return false
  }

  /** Passes never overlap: one requested while another runs is that one (it does the same work). */
  #maintenance(renewed: boolean | undefined): Promise<void> {
    if (renewed === undefined) return Promise.resolve()
    this.#maintaining ??= this.#maintain(renewed).finally(() => (this.#maintaining = undefined))
    return this.#maintaining
  }

  async #maintain(renewed: boolean): Promise<void> {
    const { store, logger, hooks } = this.deps
    if (this.#fenced) {
      // The agents here ended (fence or lapse): what is still ours has open work no agent carries.
      this.#fenced = false
      await hooks.recoverOwned()
    }
    // Taken anew after a lapse: the next heartbeat looks further.
    if (!renewed) return
    const lost = await sessionsLostBy(store, this.instanceId, hooks.runningSessions())
    if (lost.length > 0) {
      logger.warn({ action: 'instance.sessions_lost', sessions: lost.length }, 'sessions taken over by another instance; their agents end here')
      await hooks.abandon(lost)
    }
    await hooks.afterRenewal()
  }

  /**
   * Renews, retrying a failed attempt until the fence (the database may be back just before it).
   * True: renewed; false: the lease had lapsed in the database; undefined: every attempt failed.
   */
  async #renew(): Promise<boolean | undefined> {
    const { store, logger, leaseMs } = this.deps
    const firstAt = this.#monotonic()
    for (let attempt = 0; ; attempt++) {
      const startedAt = this.#monotonic()
      try {
        const renewed = await renewInstance(store, this.instanceId, leaseMs)
        if (renewed) this.#granted(startedAt)
        if (attempt > 0)
          logger.info({ action: 'instance.renew', attempts: attempt + 1, ms: Math.round(this.#monotonic() - firstAt), renewed }, 'lease renewal went through again')
        return renewed
      } catch (error) {
        // The first failure of a pass is a warning; the attempts after it, a few a second, are details.
        const fields = { ...errorFields(error), action: 'instance.renew', attempt: attempt + 1 }
        if (attempt === 0) logger.warn(fields, 'lease renewal failed; retrying until the fence')
        else logger.debug(fields, 'lease renewal failed')
        if (this.#stopped) return undefined
        // Exclusive: no fence to stay inside; after a few attempts the next heartbeat tries again.
        const left = this.deps.exclusive ? (attempt < EXCLUSIVE_ATTEMPTS - 1 ? leaseMs : 0) : this.#validUntil - leaseMs * FENCE_MARGIN - this.#monotonic()
        const delay = renewalRetryMs(attempt, left, leaseMs)
        if (delay === undefined) return undefined
        await new Promise<void>((resolve) => this.#timers.setTimeout(resolve, delay))
      }
    }
  }

  /** A grant from `startedAt` (just before its statement): new deadlines for the fence and the watchdog. */
  #granted(startedAt: number): void {
    const { leaseMs, deadlines } = this.deps
    this.#validUntil = startedAt + leaseMs
    if (this.deps.exclusive) return deadlines?.deadline(null)
    const now = this.#monotonic()
    deadlines?.deadline(Math.max(0, this.#validUntil - leaseMs * WATCHDOG_MARGIN - now))
    this.#timers.clearTimeout(this.#fenceTimer)
    this.#fenceTimer = this.#timers.setTimeout(() => this.#fence(), Math.max(0, this.#validUntil - leaseMs * FENCE_MARGIN - now))
  }

  /** No renewal in time: the agents here end now, before another instance may start its own. */
  #fence(): void {
    if (this.#stopped) return
    this.#fenced = true
    this.deps.logger.warn({ action: 'instance.fence' }, 'the lease could not be renewed in time; agents here end before it can expire')
    this.deps.hooks.leaseLost().catch((error: unknown) =>
      this.deps.logger.error({ ...errorFields(error), action: 'instance.fence' }, 'ending agents at the fence failed'),
    )
  }

  /** After a lapse: the row comes back with a fresh lease (it may have been forgotten meanwhile). */
  async #reacquire(): Promise<void> {
    const startedAt = this.#monotonic()
    await reacquireInstance(this.deps.store, this.instanceId, this.deps.leaseMs)
    this.#granted(startedAt)
  }

  #schedule(): void {
    if (this.#stopped) return
    this.#timer = this.#timers.setTimeout(() => {
      const failed = (error: unknown) => this.deps.logger.error({ ...errorFields(error), action: 'instance.heartbeat' }, 'heartbeat pass failed')
      // The next renewal is timed from this one's end, not from the maintenance pass's.
      this.#renewal()
        .finally(() => this.#schedule())
        .then((renewed) => this.#maintenance(renewed))
        .catch(failed)
    }, this.intervalMs)
  }

  /** Graceful shutdown: no more renewals, and the lease ends now so another instance takes over at once. */
  async release(): Promise<void> {
    this.#stopped = true
    this.#timers.clearTimeout(this.#timer)
    this.#timers.clearTimeout(this.#fenceTimer)
    await Promise.allSettled([this.#renewing, this.#maintaining])
    await expireInstance(this.deps.store, this.instanceId)
  }
}
