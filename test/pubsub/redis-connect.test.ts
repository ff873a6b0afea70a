// A subscription made while the Redis connection is still being set up (every instance's command
// inbox is, at start) must land. ioredis 5.8.2+ could interleave the SUBSCRIBE with its connect
// handshake and fail its ready check (redis/ioredis#2037): the subscriber reconnected, and an
// instance could stay deaf to forwarded commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { createRedisPubSub } from '../../src/pubsub/redis.ts'
import { startRedisServer, type RedisServer } from '../support/redis-server.ts'

describe('Redis pub/sub subscribing at connect', () => {
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedisServer()
  })
  afterAll(() => redis?.stop())

  it('a subscription made at once is served, without a reconnect, for each of 40 new connections', async () => {
    const warnings: string[] = []
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) })
    for (let i = 0; i < 40; i++) {
      const pubsub = createRedisPubSub(redis.url, logger)
      const inbox = pubsub.subscribe('instance', `i${i}`)
      const next = inbox.next()
      while ((await redis.subscribers(`tss:instance:i${i}`)) < 1) await new Promise((r) => setTimeout(r, 5))
      await pubsub.publish('instance', `i${i}`, { kind: 'resync', reason: `hello ${i}` })
      expect((await next).value).toEqual({ kind: 'resync', reason: `hello ${i}` })
      await inbox.return?.()
      await pubsub.close()
    }
    expect(warnings.filter((w) => w.includes('subscriber mode'))).toEqual([])
  })
})
