import { GraphQLError, type ExecutionResult } from 'graphql'
import type { Logger } from '../observability/logger.ts'
import { subscriptionQueue } from '../pubsub/subscription-queue.ts'

type Results = AsyncIterableIterator<ExecutionResult> | ExecutionResult

/** Root fields whose events are the same for every authorized subscriber (no viewer-specific data). */
export const MULTIPLEXABLE_FIELDS = new Set(['workspaceEvents', 'taskStatusSummaryUpdated'])

const isIterator = (r: Results): r is AsyncIterableIterator<ExecutionResult> =>
  typeof (r as AsyncIterableIterator<ExecutionResult>)[Symbol.asyncIterator] === 'function'

/** Queued behind a member's undelivered results, so it gets them before it ends. */
const SOURCE_ENDED = Symbol('cohort source ended')
const SOURCE_FAILED = Symbol('cohort source failed')

type Item = ExecutionResult | typeof SOURCE_ENDED | typeof SOURCE_FAILED

/**
 * Where a member's results go instead of through its iterator: written straight to its
 * connection, in the pump's own turn. Spares every member of a large cohort the promise chain of
 * an async iterator and graphql-ws's per-result serialization; the iterator still ends the
 * operation (complete, or an error) after the last result.
 */
export interface CohortSink {
  next(result: ExecutionResult): void
}

interface Member {
  push: (item: Item) => void
  sink?: CohortSink
}

interface Cohort {
  /** The first member's key: the others' copies (each a whole document) are not kept. */
  key: string
  members: Set<Member>
  source: AsyncIterableIterator<ExecutionResult>
}

/**
 * Subscription cohorts (as Hasura multiplexes live queries): subscribers of one multiplexable
 * operation with the same document and variables share one GraphQL execution per event; each
 * member gets the result through its own queue. Every member still subscribes for itself first,
 * so authorization is checked per subscriber; only the first member's source is kept.
 */
export class Cohorts {
  readonly #cohorts = new Map<string, Cohort>()

  constructor(private readonly logger: Logger) {}

  get size(): number {
    return this.#cohorts.size
  }

  async join(key: string, subscribe: () => Promise<Results> | Results, sink?: CohortSink): Promise<Results> {
    const own = await subscribe()
    if (!isIterator(own)) return own // an error (for example FORBIDDEN) is this member's alone
    let cohort = this.#cohorts.get(key)
    if (cohort) this.#release(own)
    else {
      cohort = { key, members: new Set(), source: own }
      this.#cohorts.set(key, cohort)
      this.#pump(cohort).catch((error: unknown) => this.logger.error({ err: error, action: 'cohort.pump' }, 'cohort pump failed'))
    }
    return this.#member(cohort, sink)
  }

  #member(cohort: Cohort, sink: CohortSink | undefined): AsyncIterableIterator<ExecutionResult> {
    const { push, iterator } = subscriptionQueue<Item>({
      limit: 1000,
      onReturn: () => {
        cohort.members.delete(entry)
        if (cohort.members.size === 0 && this.#cohorts.get(cohort.key) === cohort) {
          this.#cohorts.delete(cohort.key)
          this.#release(cohort.source)
        }
      },
    })
    const entry: Member = { push, sink }
    cohort.members.add(entry)
    const member: AsyncIterableIterator<ExecutionResult> = {
      async next() {
        const result = await iterator.next()
        if (result.done || (result.value !== SOURCE_ENDED && result.value !== SOURCE_FAILED)) return result as IteratorResult<ExecutionResult>
        await iterator.return?.()
        if (result.value === SOURCE_ENDED) return { value: undefined, done: true }
        throw new GraphQLError('The subscription stopped on the server; subscribe again.', { extensions: { code: 'INTERNAL_SERVER_ERROR' } })
      },
      async return() {
        await iterator.return?.()
        return { value: undefined, done: true }
      },
      async throw(error: unknown) {
        await iterator.return?.()
        throw error
      },
      [Symbol.asyncIterator]() {
        return member
      },
    }
    return member
  }

  /**
   * Reads the shared source until it ends. Members outlive neither its end (they complete) nor its
   * failure (each gets an error after what it was already owed), so none waits forever.
   */
  async #pump(cohort: Cohort): Promise<void> {
    try {
      for await (const result of cohort.source)
        for (const member of cohort.members) {
          if (member.sink) member.sink.next(result)
          else member.push(result)
        }
      for (const member of [...cohort.members]) member.push(SOURCE_ENDED)
    } catch (error) {
      this.logger.warn({ err: error, action: 'cohort.source-failed', members: cohort.members.size }, 'cohort source failed; members end with an error')
      for (const member of [...cohort.members]) member.push(SOURCE_FAILED)
    } finally {
      if (this.#cohorts.get(cohort.key) === cohort) this.#cohorts.delete(cohort.key)
    }
  }

  #release(source: AsyncIterableIterator<ExecutionResult>): void {
    source.return?.().catch((error: unknown) => this.logger.warn({ err: error, action: 'cohort.release' }, 'releasing a cohort source failed'))
  }
}
