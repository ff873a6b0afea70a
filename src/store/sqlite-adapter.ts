import { Mutex } from 'async-mutex'
import { DriverAdapterError, type IsolationLevel, type SqlDriverAdapter, type SqlDriverAdapterFactory, type SqlQuery, type Transaction } from '@prisma/driver-adapter-utils'

/**
 * SQLite's answers for "another connection holds the lock right now" that a later attempt can get
 * past. Not SQLITE_BUSY_SNAPSHOT: that one means a transaction's snapshot is stale, which no
 * waiting mends (and cannot happen here: a transaction takes the write lock before it reads).
 */
const LOCK_HELD_CODES: ReadonlySet<string> = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED'])

const BEGIN: SqlQuery = { sql: 'BEGIN IMMEDIATE', args: [], argTypes: [] }
const ROLLBACK: SqlQuery = { sql: 'ROLLBACK', args: [], argTypes: [] }

export interface LockWaitOptions {
  /** How long one statement, or one transaction's start, waits for another process's lock before it fails (busy). */
  budgetMs: number
  /** Pauses between attempts; the last repeats. */
  delaysMs: readonly number[]
  sleep?: (ms: number) => Promise<void>
  now?: () => number
}

const SQLITE_LOCK_WAITS: LockWaitOptions = { budgetMs: 500, delaysMs: [2, 5, 10, 20, 40, 80, 100] }

/** The SQLite result code of an error the driver or the adapter raised, if any. */
export function sqliteCodeOf(error: unknown): string | undefined {
  for (let cause = error, depth = 0; typeof cause === 'object' && cause !== null && depth < 4; depth++) {
    const { code, originalCode } = cause as { code?: unknown; originalCode?: unknown }
    for (const candidate of [originalCode, code]) if (typeof candidate === 'string' && candidate.startsWith('SQLITE_')) return candidate
    const next = (cause as { meta?: { driverAdapterError?: unknown } }).meta?.driverAdapterError ?? (cause as { cause?: unknown }).cause
    cause = next
  }
  return undefined
}

const lockHeld = (error: unknown) => LOCK_HELD_CODES.has(sqliteCodeOf(error) ?? '')

/**
 * better-sqlite3 runs each statement synchronously on the event loop, and SQLite's busy handler
 * waits there: with a busy_timeout of seconds, one other process holding the write lock (the sqlite3
 * shell, a backup tool) froze every request, /healthz included. Here busy_timeout is 0 and the
 * waiting is done between attempts, off the event loop: a statement that meets a held lock is tried
 * again after a pause until its budget is spent, and then fails busy (answered UNAVAILABLE).
 *
 * Transactions begin IMMEDIATE, so the write lock is taken before anything is read and never waited
 * for inside the transaction (where SQLite's rule is to roll back, not retry). A mutex is held from
 * BEGIN to COMMIT or ROLLBACK, never while waiting for another process; statements outside a
 * transaction take it too, so none runs inside another request's transaction (Prisma's adapter let
 * them, and a rollback took back writes already acknowledged).
 *
 * Prisma's own adapter released its mutex in commit() and rollback(), which Prisma calls only
 * after its COMMIT or ROLLBACK statement succeeded: a write that failed on a full disk (SQLite
 * then rolls back by itself, so the ROLLBACK after it fails) left the mutex held, and every later
 * write waited for good. Here a failed COMMIT rolls back whatever SQLite left open, a failed
 * ROLLBACK finds nothing open, and either releases the mutex itself.
 */
export class LockAwareSqliteFactory implements SqlDriverAdapterFactory {
  readonly provider = 'sqlite'
  readonly adapterName: string
  readonly #inner: SqlDriverAdapterFactory
  readonly #options: LockWaitOptions

  constructor(inner: SqlDriverAdapterFactory, options: LockWaitOptions = SQLITE_LOCK_WAITS) {
    this.#inner = inner
    this.adapterName = inner.adapterName
    this.#options = options
  }

  async connect(): Promise<SqlDriverAdapter> {
    return new LockAwareSqliteAdapter(await this.#inner.connect(), this.#options)
  }
}

export class LockAwareSqliteAdapter implements SqlDriverAdapter {
  readonly provider = 'sqlite'
  readonly adapterName: string
  readonly #inner: SqlDriverAdapter
  readonly #options: LockWaitOptions
  readonly #sleep: (ms: number) => Promise<void>
  readonly #now: () => number
  readonly #transactions = new Mutex()

  constructor(inner: SqlDriverAdapter, options: LockWaitOptions) {
    this.#inner = inner
    this.adapterName = inner.adapterName
    this.#options = options
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)))
    this.#now = options.now ?? (() => performance.now())
  }

  // Every request shares this one connection: a statement made while another request's transaction
  // is open would run inside it and be rolled back with it, though already acknowledged. So it
  // waits for the transaction to end (transactions here are short; none holds the mutex while it
  // waits for another process's lock).
  queryRaw(query: SqlQuery) {
    return this.#outsideTransactions(() => this.#inner.queryRaw(query))
  }

  executeRaw(query: SqlQuery) {
    return this.#outsideTransactions(() => this.#inner.executeRaw(query))
  }

  executeScript(script: string) {
    return this.#outsideTransactions(() => this.#inner.executeScript(script))
  }

  getConnectionInfo() {
    return this.#inner.getConnectionInfo?.() ?? { supportsRelationJoins: false }
  }

  dispose() {
    return this.#inner.dispose()
  }

  async startTransaction(isolationLevel?: IsolationLevel): Promise<Transaction> {
    // SQLite's transactions are serializable; Prisma's adapter refuses any other level the same way.
    if (isolationLevel && isolationLevel !== 'SERIALIZABLE') throw new DriverAdapterError({ kind: 'InvalidIsolationLevel', level: isolationLevel })
    const deadline = this.#now() + this.#options.budgetMs
    for (let attempt = 0; ; attempt++) {
      const release = await this.#transactions.acquire()
      try {
        await this.#inner.executeRaw(BEGIN)
        return new LockAwareTransaction(this.#inner, release)
      } catch (error) {
        // Released before the pause: this process's reads and other work go on while the lock is away.
        release()
        await this.#pauseOrThrow(error, attempt, deadline)
      }
    }
  }

  /** A statement between transactions, tried again while another process holds the lock. */
  async #outsideTransactions<T>(run: () => Promise<T>): Promise<T> {
    const deadline = this.#now() + this.#options.budgetMs
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#transactions.runExclusive(run)
      } catch (error) {
        await this.#pauseOrThrow(error, attempt, deadline)
      }
    }
  }

  /** Pauses before the next attempt if the error is a held lock and the budget allows one; else throws it. */
  async #pauseOrThrow(error: unknown, attempt: number, deadline: number): Promise<void> {
    const left = deadline - this.#now()
    if (!lockHeld(error) || left <= 0) throw error
    const { delaysMs } = this.#options
    await this.#sleep(Math.min(delaysMs[Math.min(attempt, delaysMs.length - 1)]!, left))
  }
}

class LockAwareTransaction implements Transaction {
  readonly provider = 'sqlite'
  readonly adapterName: string
  // Prisma sends COMMIT and ROLLBACK itself, as statements, then calls commit() or rollback().
  readonly options = { usePhantomQuery: false }
  readonly #inner: SqlDriverAdapter
  #release: (() => void) | undefined

  constructor(inner: SqlDriverAdapter, release: () => void) {
    this.#inner = inner
    this.adapterName = inner.adapterName
    this.#release = release
  }

  queryRaw(query: SqlQuery) {
    return this.#inner.queryRaw(query)
  }

  async executeRaw(query: SqlQuery): Promise<number> {
    try {
      return await this.#inner.executeRaw(query)
    } catch (error) {
      if (query.sql === 'COMMIT') await this.#abandon()
      // A ROLLBACK fails only when SQLite already rolled the transaction back itself (after a full
      // disk or an I/O error): nothing is left to undo, and the statement's own failure, not this
      // one, is what the caller must see. Prisma may also roll back from a timer nobody awaits.
      else if (query.sql === 'ROLLBACK') {
        this.#done()
        return 0
      }
      throw error
    }
  }

  commit() {
    this.#done()
    return Promise.resolve()
  }

  rollback() {
    this.#done()
    return Promise.resolve()
  }

  /**
   * COMMIT failed, and Prisma will not call commit() or rollback() after that. SQLite leaves the
   * transaction open after some failures (busy, a deferred constraint) and rolls it back itself
   * after others (full, I/O): a ROLLBACK ends the first and is refused by the second (nothing is
   * open); either way nothing of it stays, and the connection is free for the next transaction.
   */
  async #abandon(): Promise<void> {
    await this.#inner.executeRaw(ROLLBACK).catch(() => undefined)
    this.#done()
  }

  #done(): void {
    const release = this.#release
    this.#release = undefined
    release?.()
  }
}
