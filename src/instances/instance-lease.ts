import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type { Logger } from '../observability/logger.ts'
import { errorFields } from '../observability/error-fields.ts'
import type { Store } from '../store/store.ts'
import { expireInstance, reacquireInstance, registerInstance, renewInstance, sessionsLostBy } from '../store/instances.ts'
import type { Scheduler } from '../util/scheduler.ts'

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

/**
 * This instance's lease: registered at start, renewed every third of SESSION_LEASE_MS (one
 * statement, whatever the number of sessions), ended at once on a graceful shutdown so others
 * take the sessions over without waiting for it to lapse. Passes never overlap.
 */
export class InstanceLease {
  #timer: unknown
  #pass: Promise<void> | undefined
  #stopped = false
  /** When the lease last renewed would expire, by this instance's clock. */
  #validUntil = 0
  readonly #timers: Scheduler

  constructor(
    readonly instanceId: string,
    private readonly deps: { store: Store; logger: Logger; leaseMs: number; hooks: LeaseHooks; timers?: Scheduler },
  ) {
    this.#timers = deps.timers ?? { setTimeout: (fn, ms) => setTimeout(fn, ms).unref(), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) }
  }

  /** The last renewal still holds by this instance's clock (false: another instance may be taking over). */
  get valid(): boolean {
    return this.deps.store.now().getTime() < this.#validUntil
  }

  get intervalMs(): number {
    return Math.max(100, Math.floor(this.deps.leaseMs / 3))
  }

  async register(): Promise<void> {
    await registerInstance(this.deps.store, this.instanceId, this.deps.leaseMs)
    this.#validUntil = this.deps.store.now().getTime() + this.deps.leaseMs
  }

  start(): void {
    this.#schedule()
  }

  /** One heartbeat: renew (or notice the lease lapsed), drop sessions taken over elsewhere, take over expired ones. */
  tick(): Promise<void> {
    this.#pass ??= this.#tick().finally(() => (this.#pass = undefined))
    return this.#pass
  }

  async #tick(): Promise<void> {
    const { store, logger, leaseMs, hooks } = this.deps
    let renewed: boolean
    try {
      renewed = await renewInstance(store, this.instanceId, leaseMs)
    } catch (error) {
      logger.warn({ ...errorFields(error), action: 'instance.renew' }, 'lease renewal failed')
      // Past the lease another instance may already run these sessions: end ours rather than run twice.
      if (store.now().getTime() >= this.#validUntil) await hooks.leaseLost()
      return
    }
    if (!renewed) {
      logger.warn({ action: 'instance.lease_lost' }, 'the lease lapsed before it was renewed; agents here end, the lease is taken anew')
      await hooks.leaseLost()
      await this.#reacquire()
      await hooks.recoverOwned()
      return
    }
    this.#validUntil = store.now().getTime() + leaseMs
    const lost = await sessionsLostBy(store, this.instanceId, hooks.runningSessions())
    if (lost.length > 0) {
      logger.warn({ action: 'instance.sessions_lost', sessions: lost.length }, 'sessions taken over by another instance; their agents end here')
      await hooks.abandon(lost)
    }
    await hooks.afterRenewal()
  }

  /** After a lapse: the row comes back with a fresh lease (it may have been forgotten meanwhile). */
  async #reacquire(): Promise<void> {
    await reacquireInstance(this.deps.store, this.instanceId, this.deps.leaseMs)
    this.#validUntil = this.deps.store.now().getTime() + this.deps.leaseMs
  }

  #schedule(): void {
    if (this.#stopped) return
    this.#timer = this.#timers.setTimeout(() => {
      this.tick()
        .catch((error: unknown) => this.deps.logger.error({ ...errorFields(error), action: 'instance.heartbeat' }, 'heartbeat pass failed'))
        .finally(() => this.#schedule())
    }, this.intervalMs)
  }

  /** Graceful shutdown: no more renewals, and the lease ends now so another instance takes over at once. */
  async release(): Promise<void> {
    this.#stopped = true
    this.#timers.clearTimeout(this.#timer)
    await this.#pass?.catch(() => undefined)
    await expireInstance(this.deps.store, this.instanceId)
  }
}
