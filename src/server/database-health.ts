import { pingDatabase, probeWrite, type Db } from '../store/db.ts'

export interface DatabaseHealthOptions {
  /** How long one probe's answer stands: a flood of /readyz probes costs one `SELECT 1` per this. */
  cacheMs?: number
  /** How long a probe waits for the answer. */
  timeoutMs?: number
  now?: () => number
}

/**
 * Whether the database can serve, for /readyz (MAPPING.md "Outages and stalls"). Reachability: down
 * as soon as an operation meets an unreachable database (`markUnreachable`, from the error masking),
 * or a probe finds it so; up again once a probe gets an answer. A probe that gets none in time (a
 * busy pool, or a network that drops packets) changes nothing: it is not known to be down.
 * Writes: refused as soon as an operation's write is (`markWritesRefused`: a full disk, SQLite's
 * lock held by another process), and taken again once a probe's own small write commits, so a
 * balancer sends no writes to an instance that can only read.
 */
export class DatabaseHealth {
  readonly #db: Db
  readonly #cacheMs: number
  readonly #timeoutMs: number
  readonly #now: () => number
  #reachable = true
  #writable = true
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

  /** An operation's write was refused though the database answers: down until a probe's write commits. */
  markWritesRefused(): void {
    this.#writable = false
    this.#checkedAt = this.#now()
  }

  /** The last known state, without probing. */
  get reachable(): boolean {
    return this.#reachable
  }

  /** What /readyz waits for while down. */
  get waitingFor(): string[] {
    return [...(this.#reachable ? [] : ['database']), ...(this.#writable ? [] : ['database writes'])]
  }

  /** Probes at most once per `cacheMs`, up or down (concurrent callers share one probe): true when it can serve. */
  check(): Promise<boolean> {
    if (this.#probe) return this.#probe
    if (this.#now() - this.#checkedAt < this.#cacheMs) return Promise.resolve(this.#serving)
    this.#probe = this.#runProbe().finally(() => (this.#probe = undefined))
    return this.#probe
  }

  get #serving(): boolean {
    return this.#reachable && this.#writable
  }

  async #runProbe(): Promise<boolean> {
    const answered = await pingDatabase(this.#db, this.#timeoutMs)
    if (answered !== undefined) this.#reachable = answered
    // Only while writes are refused: a write per probe otherwise would cost every instance a commit a second.
    if (this.#reachable && !this.#writable) this.#writable = await probeWrite(this.#db, this.#timeoutMs)
    this.#checkedAt = this.#now()
    return this.#serving
  }
}
