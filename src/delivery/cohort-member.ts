import { GraphQLError, type ExecutionResult } from 'graphql'

/** Queued behind a member's undelivered results, so it gets them before it ends. */
export const SOURCE_ENDED = Symbol('cohort source ended')
export const SOURCE_FAILED = Symbol('cohort source failed')

export type Item = ExecutionResult | typeof SOURCE_ENDED | typeof SOURCE_FAILED

/**
 * Where a member's results go instead of through its iterator: written straight to its
 * connection, in the fan-out's own turn. Spares every member of a large cohort the promise chain
 * of an async iterator and graphql-ws's per-result serialization; the iterator still ends the
 * operation (complete, or an error) after the last result.
 */
export interface CohortSink {
  /** `deferred`: more results follow at once; they are written together at `flush`. */
  next(result: ExecutionResult, deferred?: boolean): void
  flush?(): void
}

const stopped = () => new GraphQLError('The subscription stopped on the server; subscribe again.', { extensions: { code: 'INTERNAL_SERVER_ERROR' } })

/** Results a member without a sink may have queued; the oldest go first past it. */
const QUEUE_LIMIT = 1000

const DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true })

/**
 * One subscriber of a cohort, as a plain object: the iterator graphql-ws runs (it waits, idle,
 * until the cohort's source ends or the client completes), the member's place in the cohort's
 * log, and what a resumed member holds back or skips. A member with a sink queues nothing:
 * its results go to the sink as the fan-out reaches it.
 */
export class CohortMember implements AsyncIterableIterator<ExecutionResult> {
  /** Log position of the next shared item this member is owed (cohorts.ts). */
  position = 0
  /** While its own replay runs: the shared items it is owed after it, with their positions. */
  seam?: { items: { item: Item; sequence?: number }[]; overflowed: boolean }
  /** Feed positions up to this one came with its replay: shared results at or before it are not its own to get. */
  floor?: number
  #queue: Item[] | undefined
  #waiting: { resolve(result: IteratorResult<ExecutionResult>): void; reject(error: unknown): void } | undefined
  #ended = false
  /** Set once its runner stopped reading the iterator (detach): how the member's end is told. */
  #onEnd: ((error?: GraphQLError) => void) | undefined

  constructor(
    readonly sink: CohortSink | undefined,
    /** Leaves the cohort: called once, however the member ends. */
    private readonly leave: (member: CohortMember) => void,
  ) {}

  get ended(): boolean {
    return this.#ended
  }

  /**
   * Its runner (the gateway) no longer reads the iterator: the member's end goes to `ended`
   * instead, once (an error when its source failed), and nothing waits on a promise meanwhile.
   */
  detach(ended: (error?: GraphQLError) => void): void {
    this.#onEnd = ended
    const queued = this.#queue
    this.#queue = undefined
    for (const item of queued ?? []) this.push(item)
  }

  /** A result (members without a sink) or the end of the source, in order. */
  push(item: Item): void {
    if (this.#ended) return
    const onEnd = this.#onEnd
    if (onEnd && (item === SOURCE_ENDED || item === SOURCE_FAILED)) {
      this.#end()
      return onEnd(item === SOURCE_FAILED ? stopped() : undefined)
    }
    const waiting = this.#waiting
    if (waiting && !this.#queue?.length) {
      this.#waiting = undefined
      return this.#settle(item, waiting)
    }
    const queue = (this.#queue ??= [])
    queue.push(item)
    if (queue.length > QUEUE_LIMIT) queue.shift()
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    const item = this.#queue?.shift()
    if (item !== undefined) return new Promise((resolve, reject) => this.#settle(item, { resolve, reject }))
    if (this.#ended) return Promise.resolve(DONE)
    return new Promise((resolve, reject) => (this.#waiting = { resolve, reject }))
  }

  return(): Promise<IteratorResult<ExecutionResult>> {
    this.#end()
    return Promise.resolve(DONE)
  }

  throw(error: unknown): Promise<IteratorResult<ExecutionResult>> {
    this.#end()
    return Promise.reject(error)
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  #settle(item: Item, to: { resolve(result: IteratorResult<ExecutionResult>): void; reject(error: unknown): void }): void {
    if (item === SOURCE_ENDED) {
      this.#end()
      return to.resolve(DONE)
    }
    if (item === SOURCE_FAILED) {
      this.#end()
      return to.reject(stopped())
    }
    to.resolve({ value: item, done: false })
  }

  #end(): void {
    if (this.#ended) return
    this.#ended = true
    this.#queue = undefined
    this.seam = undefined
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.resolve(DONE)
    this.leave(this)
  }
}
