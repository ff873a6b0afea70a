import { channelOf, RESYNC, type SubscribeOptions, type Topic, type Topics } from './pubsub.ts'
import { pushQueue } from '../util/async-iterators.ts'
import { tracing, type MessagingSystem } from '../observability/tracing.ts'

const DEFAULT_BUFFER_LIMIT = 1000

type Listener = (payload: unknown) => void

/**
 * This instance's subscribers, by channel: each gets its own bounded queue. Shared by the
 * in-process and the Redis pub/sub; the hooks tell the transport when a channel gains its
 * first or loses its last local subscriber.
 */
export class LocalFanout {
  readonly #channels = new Map<string, { topic: Topic; key: string; listeners: Set<Listener> }>()

  constructor(
    private readonly hooks: { system: MessagingSystem; onFirst?: (channel: string) => void; onLast?: (channel: string) => void },
  ) {}

  subscribe<T extends Topic>(topic: T, key: string, options: SubscribeOptions<T> = {}): AsyncIterableIterator<Topics[T]> {
    const channel = channelOf(topic, key)
    let entry = this.#channels.get(channel)
    if (!entry) {
      entry = { topic, key, listeners: new Set() }
      this.#channels.set(channel, entry)
      this.hooks.onFirst?.(channel)
    }
    const listeners = entry.listeners
    const { push, iterator } = pushQueue<Topics[T]>({
      limit: options.bufferLimit ?? DEFAULT_BUFFER_LIMIT,
      onOverflow: options.onOverflow,
      onReturn: () => {
        listeners.delete(push as Listener)
        if (listeners.size === 0 && this.#channels.get(channel)?.listeners === listeners) {
          this.#channels.delete(channel)
          this.hooks.onLast?.(channel)
        }
      },
    })
    listeners.add(push as Listener)
    return iterator
  }

  deliver(channel: string, payload: unknown): void {
    const entry = this.#channels.get(channel)
    if (!entry) return
    // Tracing on and the payload carries a trace: its deliver span covers the hand-over to every local subscriber.
    const delivery = tracing.on ? tracing.stages.delivering(payload as object, this.hooks.system, entry.topic, entry.listeners.size) : undefined
    for (const push of entry.listeners) push(payload)
    if (delivery) tracing.stages.delivered(delivery)
  }

  /** Tells every local subscriber that deltas may have been missed. */
  resyncAll(reason: string): void {
    for (const { topic, key, listeners } of this.#channels.values()) {
      const resync = RESYNC[topic](key, reason)
      for (const push of listeners) push(resync)
    }
  }

  get size(): number {
    return this.#channels.size
  }

  clear(): void {
    this.#channels.clear()
  }
}
