import { channelOf, type PubSub } from './pubsub.ts'
import { LocalFanout } from './local-fanout.ts'
import { tracing } from '../observability/tracing.ts'

/** In-process pub/sub for a single server instance (the embedded default). */
export function createMemoryPubSub(): PubSub {
  const fanout = new LocalFanout({ system: 'memory' })
  return {
    async publish(topic, key, payload, trace) {
      const channel = channelOf(topic, key)
      if (trace && tracing.on) return tracing.stages.publish(trace, 'memory', topic, payload, async (traced) => fanout.deliver(channel, traced))
      fanout.deliver(channel, payload)
    },
    subscribe: (topic, key, options) => fanout.subscribe(topic, key, options),
    async close() {
      fanout.clear()
    },
  }
}
