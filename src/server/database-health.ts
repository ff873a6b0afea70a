import { pingDatabase, type Db } from '../store/db.ts'

export interface DatabaseHealthOptions {
  /** How long one probe's answer stands: a flood of /readyz probes costs one `SELECT 1` per this. */
  cacheMs?: number
  /** How long a probe waits for the answer. */
  timeoutMs?: number
  now?: () => number
}

/**
 * Whether the database can be reached, for /readyz (MAPPING.md "Outages and stalls"): down as soon
 * as an operation meets an unreachable database (`markUnreachable`, from the error masking), or a
 * probe finds it so; up again once a probe gets an answer. A probe that gets none in time (a busy
 * pool, or a network that drops packets) changes nothing: it is not known to be down.
 */
export class DatabaseHealth {
  readonly #db: Db
  readonly #cacheMs: number
  readonly #timeoutMs: number
  readonly #now: () => number
  #reachable = true
  #checkedAt = Number.NEGATIVE_INFINITY
  #probe: Promise<boolean> | undefined

  constructor(db: Db, options: DatabaseHealthOptions = {}) {
    this.#db = db
    this.#cacheMs = options.cacheMs ?? 1000
    this.#timeoutMs = options.timeoutMs ?? 1000
    this.#now = options.now ?? Date.now
  }

  /** An operation met an unreachable database: down until a probe gets an answer. */
  markUnreachable(): void {
    this.#reachable = false
    this.#checkedAt = this.#now()
  }

  /** The last known state, without probing. */
  get reachable(): boolean {
    return this.#reachable
  }

  /** Probes at most once per `cacheMs`, up or down (concurrent callers share one probe). */
  check(): Promise<boolean> {
    if (this.#probe) return this.#probe
    if (this.#now() - this.#checkedAt < this.#cacheMs) return Promise.resolve(this.#reachable)
    this.#probe = pingDatabase(this.#db, this.#timeoutMs)
      .then((answered) => {
        if (answered !== undefined) this.#reachable = answered
        this.#checkedAt = this.#now()
        return this.#reachable
      })
      .finally(() => (this.#probe = undefined))
    return this.#probe
  }
}
