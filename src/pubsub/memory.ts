import { channelOf, type PubSub } from './pubsub.ts'
import { LocalFanout } from './local-fanout.ts'

/** In-process pub/sub for a single server instance (the embedded default). */
export function createMemoryPubSub(): PubSub {
  const fanout = new LocalFanout()
  return {
    async publish(topic, key, payload) {
      fanout.deliver(channelOf(topic, key), payload)
    },
    subscribe: (topic, key, options) => fanout.subscribe(topic, key, options),
    async close() {
      fanout.clear()
    },
  }
}
