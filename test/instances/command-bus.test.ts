// The request/reply protocol between instances, on the in-process pub/sub with hand-driven time.
import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { createMemoryPubSub } from '../../src/pubsub/memory.ts'
import { CommandBus } from '../../src/instances/command-bus.ts'
import type { Scheduler } from '../../src/util/scheduler.ts'
import type { CommandOutcome, SessionCommand } from '../../src/instances/commands.ts'

/** Timers and a clock moved by the test. */
function manualTime() {
  let now = 1_000_000
  const timers = new Map<number, { at: number; fn: () => void }>()
  let next = 0
  const api: Scheduler = {
    setTimeout: (fn, ms) => {
      timers.set(++next, { at: now + ms, fn })
      return next
    },
    clearTimeout: (handle) => void timers.delete(handle as number),
  }
  return {
    timers: api,
    now: () => now,
    pending: () => timers.size,
    advance(ms: number) {
      now += ms
      for (const [id, t] of [...timers]) if (t.at <= now) {
        timers.delete(id)
        t.fn()
      }
    },
  }
}

const logger = pino({ level: 'silent' })
const flush = () => new Promise((r) => setImmediate(r))
const refresh: SessionCommand = { type: 'refreshGit', sessionId: 's1' }

describe('command bus', () => {
  it('a request is answered with the owner’s outcome, and leaves the pending table', async () => {
    const pubsub = createMemoryPubSub()
    const time = manualTime()
    const owner = new CommandBus({ pubsub, instanceId: 'owner', logger, ...time })
    const caller = new CommandBus({ pubsub, instanceId: 'caller', logger, ...time })
    const seen: [SessionCommand, string][] = []
    owner.start(async (command, from) => {
      seen.push([command, from])
      return { ok: true, result: { messageId: 'm1' } }
    })
    caller.start(async () => ({ ok: false, notOwner: true }))
    const pending = caller.request('owner', refresh, time.now() + 5000)
    expect(await pending.reply).toEqual({ ok: true, result: { messageId: 'm1' } })
    expect(seen).toEqual([[refresh, 'caller']])
    expect(caller.pendingRequests).toBe(0)
    expect(time.pending()).toBe(0)
    await Promise.all([owner.close(), caller.close()])
  })

  it('without a reply the request times out at its deadline, and a reply after that is ignored', async () => {
    const pubsub = createMemoryPubSub()
    const time = manualTime()
    const caller = new CommandBus({ pubsub, instanceId: 'caller', logger, ...time })
    caller.start(async () => ({ ok: false, notOwner: true }))
    const pending = caller.request('nobody', refresh, time.now() + 5000)
    let settled: unknown
    void pending.reply.then((r) => (settled = r))
    time.advance(4999)
    await flush()
    expect(settled).toBeUndefined()
    time.advance(1)
    await flush()
    expect(settled).toBe('timeout')
    expect(caller.pendingRequests).toBe(0)
    await pubsub.publish('instance', 'caller', { kind: 'reply', requestId: pending.requestId, outcome: { ok: true, result: {} } })
    await flush()
    expect(settled).toBe('timeout')
    await caller.close()
  })

  it('an owner drops a request it reads after the sender’s deadline: nothing is done', async () => {
    const pubsub = createMemoryPubSub()
    const time = manualTime()
    const owner = new CommandBus({ pubsub, instanceId: 'owner', logger, ...time })
    let handled = 0
    owner.start(async (): Promise<CommandOutcome> => {
      handled++
      return { ok: true, result: {} }
    })
    await pubsub.publish('instance', 'owner', { kind: 'request', requestId: 'r1', from: 'caller', deadline: time.now(), command: refresh })
    await pubsub.publish('instance', 'owner', { kind: 'request', requestId: 'r2', from: 'caller', deadline: time.now() + 1, command: refresh })
    await flush()
    expect(handled).toBe(1)
    await owner.close()
  })

  it('cancel and close settle every pending request and clear their timers', async () => {
    const pubsub = createMemoryPubSub()
    const time = manualTime()
    const caller = new CommandBus({ pubsub, instanceId: 'caller', logger, ...time })
    caller.start(async () => ({ ok: false, notOwner: true }))
    const first = caller.request('x', refresh, time.now() + 5000)
    const second = caller.request('x', refresh, time.now() + 5000)
    first.cancel()
    expect(await first.reply).toBe('timeout')
    expect(caller.pendingRequests).toBe(1)
    await caller.close()
    expect(await second.reply).toBe('timeout')
    expect([caller.pendingRequests, time.pending()]).toEqual([0, 0])
  })
})
