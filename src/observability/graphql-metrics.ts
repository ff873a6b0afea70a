import { getOperationAST, Kind, type DocumentNode, type GraphQLSchema, type SelectionSetNode } from 'graphql'
import type { ErrorCode } from '../errors.ts'
import type { Metrics } from './metrics.ts'

export type Transport = 'http' | 'ws'

const TRANSPORTS: readonly Transport[] = ['http', 'ws']
const UNKNOWN = 'unknown'

export function errorCounter(metrics: Metrics): (code: ErrorCode) => void {
  return (code) => metrics.graphqlErrors.inc({ code })
}

function firstField(document: DocumentNode, selectionSet: SelectionSetNode, seen = new Set<string>()): string | undefined {
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) return selection.name.value
    if (selection.kind === Kind.INLINE_FRAGMENT) return firstField(document, selection.selectionSet, seen)
    if (seen.has(selection.name.value)) continue
    seen.add(selection.name.value)
    const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value)
    if (fragment?.kind === Kind.FRAGMENT_DEFINITION) return firstField(document, fragment.selectionSet, seen)
  }
  return undefined
}

/**
 * The subscription's root field as a label value. Only names of the schema's Subscription fields
 * pass (a subscription has exactly one root field once validated), so the label set stays fixed.
 */
export function subscriptionField(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null): string {
  const operation = getOperationAST(document, operationName)
  const field = operation ? firstField(document, operation.selectionSet) : undefined
  return field && schema.getSubscriptionType()?.getFields()[field] ? field : UNKNOWN
}

/** Started count, active gauge and lifetime of subscriptions; `end` may be called any number of times. */
export class SubscriptionMetrics {
  readonly #owned = new WeakMap<object, Map<string, () => void>>()

  constructor(
    private readonly metrics: Metrics,
    schema: GraphQLSchema,
    private readonly now: () => number = () => performance.now(),
  ) {
    // Every series exists from the start at 0, so a dashboard sees "none" rather than "no data".
    for (const field of [...Object.keys(schema.getSubscriptionType()?.getFields() ?? {}), UNKNOWN])
      for (const transport of TRANSPORTS) {
        metrics.subscriptionsActive.set({ transport, field }, 0)
        metrics.subscriptionsStarted.inc({ transport, field }, 0)
      }
  }

  begin(transport: Transport, field: string): () => void {
    const labels = { transport, field }
    const started = this.now()
    this.metrics.subscriptionsStarted.inc(labels)
    this.metrics.subscriptionsActive.inc(labels)
    let ended = false
    return () => {
      if (ended) return
      ended = true
      this.metrics.subscriptionsActive.dec(labels)
      this.metrics.subscriptionDuration.observe(labels, (this.now() - started) / 1000)
    }
  }

  /** A subscription held by `owner` (a WebSocket connection) under the protocol's operation id. */
  beginOwned(owner: object, id: string, transport: Transport, field: string): void {
    let owned = this.#owned.get(owner)
    if (!owned) this.#owned.set(owner, (owned = new Map()))
    owned.get(id)?.()
    owned.set(id, this.begin(transport, field))
  }

  endOwned(owner: object, id: string): void {
    const owned = this.#owned.get(owner)
    owned?.get(id)?.()
    owned?.delete(id)
  }

  /** The owner is gone (socket closed): whatever it still held has ended. */
  endAllOwned(owner: object): void {
    for (const end of this.#owned.get(owner)?.values() ?? []) end()
    this.#owned.delete(owner)
  }
}

const perRegistry = new WeakMap<Metrics, SubscriptionMetrics>()

/**
 * One per server instance: the Yoga plugin (HTTP) and the WebSocket gateway share it. The first
 * call must pass the schema (Yoga's set-up does, before the gateway attaches), whose Subscription
 * fields it starts at 0; the schema is passed in because this room sits below schema/.
 */
export function subscriptionMetrics(metrics: Metrics, schema?: GraphQLSchema): SubscriptionMetrics {
  let tracker = perRegistry.get(metrics)
  if (!tracker) {
    if (!schema) throw new Error('subscriptionMetrics: the first call (Yoga set-up) passes the schema')
    perRegistry.set(metrics, (tracker = new SubscriptionMetrics(metrics, schema)))
  }
  return tracker
}
