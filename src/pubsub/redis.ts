import { Redis } from 'ioredis'
import type { Logger } from '../observability/logger.ts'
import { channelOf, type PubSub } from './pubsub.ts'
import { LocalFanout } from './local-fanout.ts'
import { tracing } from '../observability/tracing.ts'

const PREFIX = 'tss:'

/**
 * Redis pub/sub (ioredis) so several server instances share one feed: a channel per topic key
 * (one per workspace), a dedicated subscriber connection, local fan-out to this instance's
 * subscribers. Redis pub/sub is at-most-once: after the subscriber connection comes back, every
 * local subscriber gets its topic's resync event, because messages may have been missed.
 */
export function createRedisPubSub(url: string, logger: Logger): PubSub {
  const publisher = new Redis(url, { maxRetriesPerRequest: 2 })
  // ioredis 5.8.2+ can send a SUBSCRIBE issued while it connects before its own ready check,
  // which then fails in subscriber mode and reconnects (redis/ioredis#2037): an instance's inbox,
  // subscribed at start, could stay deaf. So no client-info handshake, and no SUBSCRIBE before
  // the first ready (reconnects resubscribe by themselves, after their ready check).
  const subscriber = new Redis(url, { disableClientInfo: true })
  const handshakeDone = new Promise<void>((resolve) => subscriber.once('ready', () => resolve()))
  const fanout = new LocalFanout({
    system: 'redis',
    onFirst: (channel) =>
      void handshakeDone
        .then(() => subscriber.subscribe(PREFIX + channel))
        .catch((error: unknown) => logger.error({ err: error, channel }, 'redis subscribe failed')),
    onLast: (channel) => void handshakeDone.then(() => subscriber.unsubscribe(PREFIX + channel)).catch(() => undefined),
  })
  let lostConnection = false

  for (const connection of [publisher, subscriber])
    connection.on('error', (error: Error) => logger.warn({ err: error, action: 'redis' }, 'redis connection error'))

  subscriber.on('message', (channel: string, message: string) => {
    let payload: unknown
    try {
      payload = JSON.parse(message)
    } catch {
      logger.warn({ channel }, 'ignored a malformed pub/sub message')
      return
    }
    fanout.deliver(channel.slice(PREFIX.length), payload)
  })
  subscriber.on('close', () => (lostConnection = true))
  subscriber.on('ready', () => {
    if (!lostConnection) return
    lostConnection = false
    // ioredis re-subscribes the channels itself; what was published meanwhile is gone.
    logger.warn({ channels: fanout.size }, 'redis pub/sub reconnected; subscribers told to resync')
    fanout.resyncAll('pub/sub connection was interrupted; deltas may have been missed')
  })

  return {
    async publish(topic, key, payload, trace) {
      const channel = PREFIX + channelOf(topic, key)
      // Traced: the payload crosses Redis with its traceparent, so other instances continue the trace.
      if (trace && tracing.on) return tracing.stages.publish(trace, 'redis', topic, payload, async (traced) => void (await publisher.publish(channel, JSON.stringify(traced))))
      await publisher.publish(channel, JSON.stringify(payload))
    },
    subscribe: (topic, key, options) => fanout.subscribe(topic, key, options),
    async close() {
      fanout.clear()
      await Promise.allSettled([publisher.quit(), subscriber.quit()])
    },
  }
}
