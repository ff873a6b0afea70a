import { GraphQLError, type ExecutionResult } from 'graphql'
import type { CohortMember } from './cohort-member.ts'

/**
 * What graphql-ws runs for a resumed member: its own execution until its replay is over (then
 * released, with its context), then the member in the cohort.
 */
export class ResumedMember implements AsyncIterableIterator<ExecutionResult> {
  #replaying: AsyncIterableIterator<ExecutionResult> | undefined
  /** Called once, when the replay is over; then let go (with what it holds). */
  #toShared: ((member: CohortMember) => void) | undefined

  constructor(
    replay: AsyncIterableIterator<ExecutionResult>,
    private readonly member: CohortMember,
    toShared: (member: CohortMember) => void,
  ) {
    this.#replaying = replay
    this.#toShared = toShared
  }

  #replayOver(): void {
    this.#replaying = undefined
    const toShared = this.#toShared
    this.#toShared = undefined
    toShared?.(this.member)
  }

  async next(): Promise<IteratorResult<ExecutionResult>> {
    const replaying = this.#replaying
    if (replaying) {
      let result: IteratorResult<ExecutionResult>
      try {
        result = await replaying.next()
      } catch (error) {
        await this.return()
        throw error
      }
      if (!result.done) return result
      this.#replayOver()
    }
    return this.member.next()
  }

  /**
   * Its runner (the gateway) stops reading it: the replay's results go to the member's sink as
   * they come, then the member runs in its cohort, its end (or the replay's failure) told to `ended`.
   */
  detach(ended: (error?: GraphQLError) => void): void {
    const replaying = this.#replaying
    const sink = this.member.sink
    if (!replaying || !sink) return this.member.detach(ended)
    const drain = async () => {
      for (let result = await replaying.next(); !result.done; result = await replaying.next()) {
        if (this.#replaying !== replaying) return // returned meanwhile
        sink.next(result.value)
      }
      if (this.#replaying !== replaying) return
      this.#replayOver()
      this.member.detach(ended)
    }
    drain().catch(async (error: unknown) => {
      await this.return()
      ended(error instanceof GraphQLError ? error : new GraphQLError(error instanceof Error ? error.message : String(error), { originalError: error instanceof Error ? error : undefined }))
    })
  }

  async return(): Promise<IteratorReturnResult<undefined>> {
    const ending = this.#replaying
    this.#replaying = undefined
    this.#toShared = undefined
    await Promise.all([ending?.return?.(), this.member.return()])
    return { value: undefined, done: true }
  }

  async throw(error: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.return()
    throw error
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}
