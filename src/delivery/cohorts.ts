import { GraphQLError, Kind, print, visit, type DocumentNode, type ExecutionArgs, type ExecutionResult, type FieldNode } from 'graphql'
import type { FeedTap } from '../feed/feed-tap.ts'
import type { Logger } from '../observability/logger.ts'
import { asyncIterableIterator, isAsyncIterable, pushQueue } from '../util/async-iterators.ts'
import { tracing } from '../observability/tracing.ts'

type Results = AsyncIterableIterator<ExecutionResult> | ExecutionResult

/** Root fields whose events are the same for every authorized subscriber (no viewer-specific data). */
export const MULTIPLEXABLE_FIELDS = new Set(['workspaceEvents', 'taskStatusSummaryUpdated'])

const isIterator = (r: Results): r is AsyncIterableIterator<ExecutionResult> => isAsyncIterable(r)

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

/** Shared results a resumed member may hold back while its own replay runs (then it ends, to subscribe again). */
const SEAM_LIMIT = 1000

interface Member {
  push: (item: Item) => void
  sink?: CohortSink
  /** While its own replay runs: the shared items it is owed after it, with their positions. */
  seam?: { items: { item: Item; sequence?: number }[]; overflowed: boolean }
  /** Positions up to this one came with its replay: shared results at or before it are not its own to get. */
  floor?: number
}

interface Cohort {
  /** The first member's key: the others' copies (each a whole document) are not kept. */
  key: string
  members: Set<Member>
  source: AsyncIterableIterator<ExecutionResult>
  /** Where the source's feed writes the position of each result (none: results are not filtered). */
  tap?: FeedTap
}

/** How a subscriber joins: its own subscription's tap and, for a resume, the cohort's live execution. */
export interface JoinOptions {
  tap?: FeedTap
  /**
   * The member resumes after a cursor: `subscribe` (its own) serves its replay only, and this is
   * the live execution the cohort shares, started if the cohort does not exist yet.
   */
  live?: { subscribe: () => Promise<Results> | Results; tap: FeedTap }
}

/**
 * Subscription cohorts (as Hasura multiplexes live queries): subscribers of one multiplexable
 * operation with the same document and variables share one GraphQL execution per event; each
 * member gets the result through its own queue. Every member still subscribes for itself first,
 * so authorization is checked per subscriber; only the first member's source is kept. A resumed
 * member (`live` in JoinOptions) gets its own replay first, then the shared results its replay
 * did not cover, by feed position (FeedTap).
 */
export class Cohorts {
  readonly #cohorts = new Map<string, Cohort>()

  constructor(private readonly logger: Logger) {}

  get size(): number {
    return this.#cohorts.size
  }

  async join(key: string, subscribe: () => Promise<Results> | Results, sink?: CohortSink, options: JoinOptions = {}): Promise<Results> {
    if (options.live) return this.#resume(key, subscribe, sink, options.tap ?? {}, options.live)
    const own = await subscribe()
    if (!isIterator(own)) return own // an error (for example FORBIDDEN) is this member's alone
    let cohort = this.#cohorts.get(key)
    if (cohort) this.#release(own)
    else cohort = this.#open(key, own, options.tap)
    return this.#member(cohort, sink).iterator
  }

  #open(key: string, source: AsyncIterableIterator<ExecutionResult>, tap: FeedTap | undefined): Cohort {
    const cohort: Cohort = { key, members: new Set(), source, tap }
    this.#cohorts.set(key, cohort)
    this.#pump(cohort).catch((error: unknown) => this.logger.error({ err: error, action: 'cohort.pump' }, 'cohort pump failed'))
    return cohort
  }

  /**
   * A resumed member: it joins (holding the shared results back) before its own replay reads the
   * feed head, so every position after that head is among what it holds. It gets its replay, then
   * what it held that the replay did not cover, then the shared results as they come.
   */
  async #resume(key: string, replay: () => Promise<Results> | Results, sink: CohortSink | undefined, tap: FeedTap, live: NonNullable<JoinOptions['live']>): Promise<Results> {
    let cohort = this.#cohorts.get(key)
    if (!cohort) {
      const shared = await live.subscribe()
      if (!isIterator(shared)) return shared // refused (FORBIDDEN): this member's alone
      cohort = this.#cohorts.get(key)
      if (cohort) this.#release(shared)
      else cohort = this.#open(key, shared, live.tap)
    }
    const { entry, iterator: member } = this.#member(cohort, sink, true)
    const shared = cohort.tap
    tap.liveCovered = () => shared?.covered
    let own: Results
    try {
      own = await replay()
    } catch (error) {
      await member.return?.()
      throw error
    }
    if (!isIterator(own)) {
      await member.return?.()
      return own
    }
    // The member's own execution, until its replay is over: then released, with its context.
    let replaying: AsyncIterableIterator<ExecutionResult> | undefined = own
    const toShared = () => {
      replaying = undefined
      const seam = entry.seam
      entry.seam = undefined
      entry.floor = tap.replayedUpTo
      if (!seam) return
      if (seam.overflowed) {
        this.logger.warn({ action: 'cohort.seam-overflow', held: SEAM_LIMIT }, 'a resumed member held too many shared results during its replay; it ends to subscribe again')
        return entry.push(SOURCE_FAILED)
      }
      for (const { item, sequence } of seam.items) this.#deliver(entry, item, sequence)
    }
    const end = async (): Promise<IteratorReturnResult<undefined>> => {
      const ending = replaying
      replaying = undefined
      await Promise.all([ending?.return?.(), member.return?.()])
      return { value: undefined, done: true }
    }
    return asyncIterableIterator<ExecutionResult>({
      async next() {
        if (replaying) {
          let result: IteratorResult<ExecutionResult>
          try {
            result = await replaying.next()
          } catch (error) {
            await end()
            throw error
          }
          if (!result.done) return result
          toShared()
        }
        return member.next()
      },
      return: end,
      async throw(error: unknown) {
        await end()
        throw error
      },
    })
  }

  /** Hands one shared item to a member: held back during its replay, dropped if its replay covered it. */
  #deliver(member: Member, item: Item, sequence: number | undefined): void {
    if (member.seam) {
      if (member.seam.overflowed) return
      if (member.seam.items.length >= SEAM_LIMIT) {
        member.seam.overflowed = true
        member.seam.items = []
      } else member.seam.items.push({ item, sequence })
      return
    }
    if (item === SOURCE_ENDED || item === SOURCE_FAILED) return member.push(item)
    if (member.floor !== undefined && sequence !== undefined && sequence <= member.floor) return
    if (member.sink) member.sink.next(item)
    else member.push(item)
  }

  #member(cohort: Cohort, sink: CohortSink | undefined, resuming = false): { entry: Member; iterator: AsyncIterableIterator<ExecutionResult> } {
    const { push, iterator } = pushQueue<Item>({
      limit: 1000,
      onReturn: () => {
        cohort.members.delete(entry)
        if (cohort.members.size === 0 && this.#cohorts.get(cohort.key) === cohort) {
          this.#cohorts.delete(cohort.key)
          this.#release(cohort.source)
        }
      },
    })
    const entry: Member = { push, sink, seam: resuming ? { items: [], overflowed: false } : undefined }
    cohort.members.add(entry)
    const member = asyncIterableIterator<ExecutionResult>({
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
    })
    return { entry, iterator: member }
  }

  /**
   * Reads the shared source until it ends. Members outlive neither its end (they complete) nor its
   * failure (each gets an error after what it was already owed), so none waits forever.
   */
  async #pump(cohort: Cohort): Promise<void> {
    try {
      for await (const result of cohort.source) {
        const sequence = cohort.tap?.sequence
        const trace = tracing.on ? cohort.tap?.trace : undefined
        if (trace) tracing.stages.fanOut(trace, cohort.members.size, () => this.#deliverAll(cohort, result, sequence))
        else this.#deliverAll(cohort, result, sequence)
      }
      for (const member of [...cohort.members]) this.#deliver(member, SOURCE_ENDED, undefined)
    } catch (error) {
      this.logger.warn({ err: error, action: 'cohort.source-failed', members: cohort.members.size }, 'cohort source failed; members end with an error')
      for (const member of [...cohort.members]) this.#deliver(member, SOURCE_FAILED, undefined)
    } finally {
      if (this.#cohorts.get(cohort.key) === cohort) this.#cohorts.delete(cohort.key)
    }
  }

  #deliverAll(cohort: Cohort, result: ExecutionResult, sequence: number | undefined): void {
    for (const member of cohort.members) this.#deliver(member, result, sequence)
  }

  #release(source: AsyncIterableIterator<ExecutionResult>): void {
    source.return?.().catch((error: unknown) => this.logger.warn({ err: error, action: 'cohort.release' }, 'releasing a cohort source failed'))
  }
}

/** How a feed subscription joins its cohort. */
export interface FeedCohortPlan {
  /** Document, operation name and variables without the resume cursor, which is each subscriber's own. */
  key: string
  /** For a resume: the same operation with no cursor, the live execution the cohort shares. */
  live?: { document: DocumentNode; variableValues: Record<string, unknown> | undefined }
}

type Variables = Record<string, unknown> | null | undefined

/**
 * The cohort of a feed subscription (`field` its root field): subscribers that differ only by
 * their `after` (inline or a variable) share one live execution; each one's replay is its own.
 */
export function feedCohortPlan(field: FieldNode, document: DocumentNode, query: string, operationName: string | null | undefined, variables: Variables): FeedCohortPlan {
  const after = field.arguments?.find((a) => a.name.value === 'after')?.value
  const keyOf = (text: string, values: Variables, resumed = true) => JSON.stringify([text, operationName ?? null, values ?? null, resumed])
  // Live-only subscribers share a cohort of their own: their execution tracks positions from its
  // first event, so until then a lost pub/sub link is a WorkspaceResync for them, as alone; the
  // resumed cohort's execution tracks from the feed head, which its members' replays rely on.
  if (!after || after.kind === Kind.NULL) return { key: keyOf(query, variables, false) }
  if (after.kind === Kind.VARIABLE) {
    const { [after.name.value]: cursor, ...others } = variables ?? {}
    const key = keyOf(query, others)
    return cursor == null ? { key: keyOf(query, variables, false) } : { key, live: { document, variableValues: { ...others, [after.name.value]: null } } }
  }
  const live = visit(document, {
    Field: (node) => (node === field ? { ...node, arguments: node.arguments?.filter((a) => a.name.value !== 'after') } : undefined),
  })
  return { key: keyOf(print(live), variables), live: { document: live, variableValues: variables ?? undefined } }
}

/**
 * Joins a feed subscription to its cohort. Each subscriber still subscribes for itself (authorized
 * and counted as its own); a resumed one's own execution serves its replay only.
 */
export function joinFeedCohort(
  cohorts: Cohorts,
  plan: FeedCohortPlan,
  sink: CohortSink,
  args: ExecutionArgs,
  subscribe: (args: ExecutionArgs) => Promise<Results> | Results,
): Promise<Results> {
  const context = args.contextValue as { feedTap?: FeedTap; onWorkspaceScope?: unknown }
  const tap: FeedTap = plan.live ? { replayOnly: true } : {}
  context.feedTap = tap
  if (!plan.live) return cohorts.join(plan.key, () => subscribe(args), sink, { tap })
  const liveTap: FeedTap = { shared: true }
  // A context of its own (it runs beside the member's replay), and no access scope: the member's
  // own subscription holds that; the shared execution ends when its last member leaves.
  const contextValue = { ...context, feedTap: liveTap, onWorkspaceScope: undefined }
  const live: ExecutionArgs = { ...args, document: plan.live.document, variableValues: plan.live.variableValues, contextValue }
  return cohorts.join(plan.key, () => subscribe(args), sink, { tap, live: { subscribe: () => subscribe(live), tap: liveTap } })
}
