import type { ExecutionResult } from 'graphql'
import type { FeedTap } from '../feed/feed-tap.ts'
import type { Logger } from '../observability/logger.ts'
import { isAsyncIterable } from '../util/async-iterators.ts'
import { tracing } from '../observability/tracing.ts'
import { CohortMember, SOURCE_ENDED, SOURCE_FAILED, type CohortSink, type Item } from './cohort-member.ts'
import { ResumedMember } from './resumed-member.ts'
import type { Results } from './operation-pipeline.ts'

export type { CohortSink } from './cohort-member.ts'

const isIterator = (r: Results): r is AsyncIterableIterator<ExecutionResult> => isAsyncIterable(r)

/** Shared results a resumed member may hold back while its own replay runs (then it ends, to subscribe again). */
const SEAM_LIMIT = 1000
/** Members the fan-out serves in one turn of the event loop before it lets I/O and the next event in. */
const SLICE = 256

interface Cohort {
  /** The first member's key: the others' copies (each a whole document) are not kept. */
  key: string
  members: Set<CohortMember>
  source: AsyncIterableIterator<ExecutionResult>
  /** Where the source's feed writes the position of each result (none: results are not filtered). */
  tap?: FeedTap
  /** Shared items not yet handed to every member, oldest first; `log[0]` is at position `base`. */
  log: { item: Item; sequence?: number }[]
  base: number
  walking: boolean
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
 * operation with the same document and variables share one GraphQL execution per event. Every
 * member still subscribes for itself first, so authorization is checked per subscriber; only the
 * first member's source is kept. A resumed member (`live` in JoinOptions) gets its own replay
 * first, then the shared results its replay did not cover, by feed position (FeedTap).
 *
 * The fan-out walks the members in slices (SLICE per turn), each member handed every shared item
 * it has not had yet: when a change makes two results (a task edit and its summary), a member
 * reached after both were made gets them back to back, so the results of one change reach each
 * subscriber together rather than all of one kind first.
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
    return this.#member(cohort, sink)
  }

  #open(key: string, source: AsyncIterableIterator<ExecutionResult>, tap: FeedTap | undefined): Cohort {
    const cohort: Cohort = { key, members: new Set(), source, tap, log: [], base: 0, walking: false }
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
    const member = this.#member(cohort, sink)
    member.seam = { items: [], overflowed: false }
    const shared = cohort.tap
    tap.liveCovered = () => shared?.covered
    let own: Results
    try {
      own = await replay()
    } catch (error) {
      await member.return()
      throw error
    }
    if (!isIterator(own)) {
      await member.return()
      return own
    }
    return new ResumedMember(own, member, (to) => this.#toShared(to, tap))
  }

  /** The member's replay is over: what it held back and its replay did not cover, then the shared results as they come. */
  #toShared(member: CohortMember, tap: FeedTap): void {
    const seam = member.seam
    member.seam = undefined
    member.floor = tap.replayedUpTo
    if (!seam) return
    if (seam.overflowed) {
      this.logger.warn({ action: 'cohort.seam-overflow', held: SEAM_LIMIT }, 'a resumed member held too many shared results during its replay; it ends to subscribe again')
      return member.push(SOURCE_FAILED)
    }
    for (const { item, sequence } of seam.items) this.#deliver(member, item, sequence)
  }

  /** Hands one shared item to a member: held back during its replay, dropped if its replay covered it. */
  #deliver(member: CohortMember, item: Item, sequence: number | undefined, deferred = false): void {
    const seam = member.seam
    if (seam) {
      if (seam.overflowed) return
      if (seam.items.length >= SEAM_LIMIT) {
        seam.overflowed = true
        seam.items = []
      } else seam.items.push({ item, sequence })
      return
    }
    if (item === SOURCE_ENDED || item === SOURCE_FAILED) return member.push(item)
    if (member.floor !== undefined && sequence !== undefined && sequence <= member.floor) return
    if (member.sink) member.sink.next(item, deferred)
    else member.push(item)
  }

  #member(cohort: Cohort, sink: CohortSink | undefined): CohortMember {
    const member = new CohortMember(sink, (gone) => {
      cohort.members.delete(gone)
      if (cohort.members.size === 0 && this.#cohorts.get(cohort.key) === cohort) {
        this.#cohorts.delete(cohort.key)
        this.#release(cohort.source)
      }
    })
    member.position = cohort.base + cohort.log.length
    cohort.members.add(member)
    return member
  }

  /**
   * Reads the shared source until it ends. Members outlive neither its end (they complete) nor its
   * failure (each gets an error after what it was already owed), so none waits forever.
   */
  async #pump(cohort: Cohort): Promise<void> {
    try {
      for await (const result of cohort.source) {
        const trace = tracing.on ? cohort.tap?.trace : undefined
        const sequence = cohort.tap?.sequence
        if (trace) tracing.stages.fanOut(trace, cohort.members.size, () => this.#publish(cohort, result, sequence))
        else this.#publish(cohort, result, sequence)
      }
      this.#publish(cohort, SOURCE_ENDED, undefined)
    } catch (error) {
      this.logger.warn({ err: error, action: 'cohort.source-failed', members: cohort.members.size }, 'cohort source failed; members end with an error')
      this.#publish(cohort, SOURCE_FAILED, undefined)
    } finally {
      if (this.#cohorts.get(cohort.key) === cohort) this.#cohorts.delete(cohort.key)
    }
  }

  /** Logs a shared item and starts a fan-out, unless one is under way (it reaches the item too). */
  #publish(cohort: Cohort, item: Item, sequence: number | undefined): void {
    cohort.log.push({ item, sequence })
    if (cohort.walking) return
    cohort.walking = true
    this.#walk(cohort, cohort.members.values(), cohort.base + cohort.log.length)
  }

  /**
   * One slice of a pass over the members (Set iteration skips members gone since and reaches
   * those joined since, who are owed nothing yet). A pass that ends with items logged during it
   * starts another, for the members it reached before them; otherwise the log is emptied.
   */
  #walk(cohort: Cohort, members: SetIterator<CohortMember>, passEnd: number): void {
    try {
      let served = 0
      for (let next = members.next(); !next.done; next = members.next()) {
        this.#catchUp(cohort, next.value)
        if (++served === SLICE) {
          setImmediate(() => this.#walk(cohort, members, passEnd))
          return
        }
      }
    } catch (error) {
      this.logger.error({ err: error, action: 'cohort.fanout' }, 'handing a shared result to a member failed')
      setImmediate(() => this.#walk(cohort, members, passEnd))
      return
    }
    const end = cohort.base + cohort.log.length
    if (end > passEnd) {
      setImmediate(() => this.#walk(cohort, cohort.members.values(), end))
      return
    }
    cohort.log = []
    cohort.base = end
    cohort.walking = false
  }

  /** Every item the member lacks, written together (a task edit's two frames in one system call). */
  #catchUp(cohort: Cohort, member: CohortMember): void {
    const end = cohort.base + cohort.log.length
    if (member.position >= end) return
    while (member.position < end && !member.ended) {
      const entry = cohort.log[member.position - cohort.base]!
      member.position++
      this.#deliver(member, entry.item, entry.sequence, true)
    }
    member.sink?.flush?.()
  }

  #release(source: AsyncIterableIterator<ExecutionResult>): void {
    source.return?.().catch((error: unknown) => this.logger.warn({ err: error, action: 'cohort.release' }, 'releasing a cohort source failed'))
  }
}
