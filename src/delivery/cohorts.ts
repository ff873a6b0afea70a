import type { ExecutionResult } from 'graphql'
import { subscriptionQueue } from '../pubsub/subscription-queue.ts'

type Results = AsyncIterableIterator<ExecutionResult> | ExecutionResult

/** Root fields whose events are the same for every authorized subscriber (no viewer-specific data). */
export const MULTIPLEXABLE_FIELDS = new Set(['workspaceEvents', 'taskStatusSummaryUpdated'])

const isIterator = (r: Results): r is AsyncIterableIterator<ExecutionResult> =>
  typeof (r as AsyncIterableIterator<ExecutionResult>)[Symbol.asyncIterator] === 'function'

/**
 * Subscription cohorts (as Hasura multiplexes live queries): subscribers of one multiplexable
 * operation with the same document and variables share one GraphQL execution per event; each
 * member gets the result through its own queue. Every member still subscribes for itself first,
 * so authorization is checked per subscriber; only the first member's source is kept.
 */
export class Cohorts {
  readonly #cohorts = new Map<string, { members: Set<(r: ExecutionResult) => void>; source: AsyncIterableIterator<ExecutionResult> }>()

  get size(): number {
    return this.#cohorts.size
  }

  async join(key: string, subscribe: () => Promise<Results> | Results): Promise<Results> {
    const own = await subscribe()
    if (!isIterator(own)) return own // an error (for example FORBIDDEN) is this member's alone
    let cohort = this.#cohorts.get(key)
    if (cohort) await own.return?.()
    else {
      cohort = { members: new Set(), source: own }
      this.#cohorts.set(key, cohort)
      void this.#pump(key, cohort)
    }
    const members = cohort.members
    const { push, iterator } = subscriptionQueue<ExecutionResult>({
      limit: 1000,
      onReturn: () => {
        members.delete(push)
        if (members.size === 0 && this.#cohorts.get(key) === cohort) {
          this.#cohorts.delete(key)
          void cohort.source.return?.()
        }
      },
    })
    members.add(push)
    return iterator
  }

  async #pump(key: string, cohort: { members: Set<(r: ExecutionResult) => void>; source: AsyncIterableIterator<ExecutionResult> }) {
    try {
      for await (const result of cohort.source) for (const push of cohort.members) push(result)
    } finally {
      if (this.#cohorts.get(key) === cohort) this.#cohorts.delete(key)
    }
  }
}
