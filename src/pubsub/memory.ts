import { channelOf, type PubSub, type Topic, type Topics, type SubscribeOptions } from './pubsub.ts'
import { subscriptionQueue } from './subscription-queue.ts'

const DEFAULT_BUFFER_LIMIT = 1000

/** In-process pub/sub for a single server instance (the embedded default). */
export function createMemoryPubSub(): PubSub {
  const channels = new Map<string, Set<(payload: unknown) => void>>()

  return {
    async publish(topic, key, payload) {
      for (const push of channels.get(channelOf(topic, key)) ?? []) push(payload)
    },
    subscribe<T extends Topic>(topic: T, key: string, options: SubscribeOptions<T> = {}) {
      const channel = channelOf(topic, key)
      const listeners = channels.get(channel) ?? new Set()
      channels.set(channel, listeners)
      const { push, iterator } = subscriptionQueue<Topics[T]>({
        limit: options.bufferLimit ?? DEFAULT_BUFFER_LIMIT,
        onOverflow: options.onOverflow,
        onReturn: () => {
          listeners.delete(push as (payload: unknown) => void)
          if (listeners.size === 0) channels.delete(channel)
        },
      })
      listeners.add(push as (payload: unknown) => void)
      return iterator
    },
    async close() {
      channels.clear()
    },
  }
}
