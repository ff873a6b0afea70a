import { describe, expect, it } from 'vitest'
import { MAX_QUEUED_WRITES, SessionCoalescer, type CoalescerSink } from '../../src/agents/coalescer.ts'
import type { Scheduler } from '../../src/util/scheduler.ts'

/** Timers that fire only when the test advances time: deterministic windows. */
function manualScheduler() {
  let now = 0
  const timers = new Map<number, { at: number; fn: () => void }>()
  let next = 1
  const scheduler: Scheduler = {
    setTimeout(fn, ms) {
      const id = next++
      timers.set(id, { at: now + ms, fn })
      return id
    },
    clearTimeout(handle) {
      timers.delete(handle as number)
    },
  }
  return {
    scheduler,
    get now() {
      return now
    },
    advance(ms: number) {
      now += ms
      for (const [id, timer] of [...timers].sort((a, b) => a[1].at - b[1].at))
        if (timer.at <= now) {
          timers.delete(id)
          timer.fn()
        }
    },
  }
}

function recordingSink(clock: { now: number }) {
  const writes: { op: 'create' | 'update'; id: string; content: string; at: number; kind?: string }[] = []
  let ids = 0
  const stored = new Map<string, string>()
  const sink: CoalescerSink = {
    async create(kind, text) {
      const id = `m${++ids}`
      stored.set(id, text)
      writes.push({ op: 'create', id, content: text, at: clock.now, kind })
      return id
    },
    // Records what the store holds after each append, so expectations read as whole contents.
    async update(id, { offset, text }) {
      const before = stored.get(id) ?? ''
      if (offset !== before.length) throw new Error(`append at ${offset} onto ${before.length} characters`)
      stored.set(id, before + text)
      writes.push({ op: 'update', id, content: before + text, at: clock.now })
    },
  }
  return { sink, writes, stored }
}

describe('SessionCoalescer (100 ms windows, injected timers)', () => {
  it('creates the record on the first non-empty chunk at once, without waiting for a window', async () => {
    const time = manualScheduler()
    const { sink, writes } = recordingSink(time)
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    c.chunk('REASONING', '')
    c.chunk('REASONING', 'a')
    await Promise.resolve()
    await new Promise((r) => setImmediate(r))
    expect(writes).toEqual([{ op: 'create', id: 'm1', content: 'a', at: 0, kind: 'REASONING' }])
  })

  it('publishes adjacent chunks at most once per 100 ms window, content exact and in order', async () => {
    const time = manualScheduler()
    const { sink, writes, stored } = recordingSink(time)
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    let expected = ''
    for (let i = 0; i < 3000; i++) {
      c.chunk('REASONING', `${i};`)
      expected += `${i};`
      if (i % 100 === 99) time.advance(7) // 3000 chunks over 210 ms of fake time
    }
    await c.flush()
    const updates = writes.filter((w) => w.op === 'update')
    for (let i = 1; i < updates.length - 1; i++) expect(updates[i]!.at - updates[i - 1]!.at).toBeGreaterThanOrEqual(100)
    // 210 ms of streaming: 2 window publications plus the barrier's.
    expect(updates.length).toBeLessThanOrEqual(3)
    expect(stored.get('m1')).toBe(expected)
    expect(c.stats).toMatchObject({ received: 3000, coalesced: 2999 })
  })

  it('counts the agent chunks of joined runs as if they had come one by one', async () => {
    const time = manualScheduler()
    const one = recordingSink(time)
    const joined = recordingSink(time)
    const single = new SessionCoalescer(one.sink, (e) => { throw e }, time.scheduler)
    const runs = new SessionCoalescer(joined.sink, (e) => { throw e }, time.scheduler)
    // Two messages: 5 chunks then 3, the first message's chunks joined 3 + 2, the second's all 3.
    const chunks = [['a', 'b', 'c', 'd', 'e'], ['x', 'y', 'z']] as const
    for (const [m, texts] of chunks.entries()) for (const t of texts) single.chunk('MESSAGE', t, `m${m}`)
    runs.chunk('MESSAGE', 'abc', 'm0', 3)
    runs.chunk('MESSAGE', 'de', 'm0', 2)
    runs.chunk('MESSAGE', 'xyz', 'm1', 3)
    await Promise.all([single.flush(), runs.flush()])
    expect(runs.stats).toEqual({ ...single.stats, flushed: runs.stats.flushed })
    expect(runs.stats).toMatchObject({ received: 8, coalesced: 6 })
    expect([...joined.stored.values()]).toEqual(['abcde', 'xyz'])
  })

  it('flushes pending content before a barrier, and a new message after the barrier gets its own record', async () => {
    const time = manualScheduler()
    const { sink, writes } = recordingSink(time)
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    c.chunk('MESSAGE', 'Hel')
    c.chunk('MESSAGE', 'lo')
    await c.flush() // e.g. a tool call arrives
    c.chunk('MESSAGE', 'after')
    await c.flush()
    expect(writes.map((w) => [w.op, w.id, w.content])).toEqual([
      ['create', 'm1', 'Hel'],
      ['update', 'm1', 'Hello'],
      ['create', 'm2', 'after'],
    ])
  })

  it('starts a new record when the kind or the agent message id changes, flushing the previous one first', async () => {
    const time = manualScheduler()
    const { sink, writes } = recordingSink(time)
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    c.chunk('REASONING', 'think ')
    c.chunk('REASONING', 'more')
    c.chunk('MESSAGE', 'answer', 'x')
    c.chunk('MESSAGE', ' two', 'y')
    await c.flush()
    expect(writes.map((w) => [w.op, w.id, w.content])).toEqual([
      ['create', 'm1', 'think '],
      ['update', 'm1', 'think more'],
      ['create', 'm2', 'answer'],
      ['create', 'm3', ' two'],
    ])
  })

  it('writes nothing extra when nothing is pending at a barrier', async () => {
    const time = manualScheduler()
    const { sink, writes } = recordingSink(time)
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    c.chunk('MESSAGE', 'x')
    await c.flush()
    await c.flush()
    time.advance(500)
    expect(writes).toHaveLength(1)
  })

  it('stays bounded under a store slower than the agent: one write in flight, one pending per message, final content exact', async () => {
    const time = manualScheduler()
    const released: (() => void)[] = []
    const writes: { op: 'create' | 'update'; content: string }[] = []
    let inFlight = 0
    let maxInFlight = 0
    let maxQueued = 0
    // Every write waits until the test releases it: the store is as slow as the test wants.
    const slow = async <T>(op: 'create' | 'update', content: string, value: T): Promise<T> => {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      await new Promise<void>((resolve) => released.push(resolve))
      writes.push({ op, content })
      inFlight--
      return value
    }
    let stored = ''
    const sink: CoalescerSink = {
      create: (_kind, text) => slow('create', (stored = text), 'm1'),
      update: (_id, append) => {
        expect(append.offset).toBe(stored.length)
        return slow('update', (stored += append.text), undefined)
      },
    }
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    let expected = ''
    for (let i = 0; i < 30_000; i++) {
      c.chunk('REASONING', `${i};`)
      expected += `${i};`
      if (i % 100 === 99) time.advance(7) // 2.1 s of windows while the create is still in flight
      maxQueued = Math.max(maxQueued, c.queuedWrites)
    }
    expect(maxQueued).toBeLessThanOrEqual(1)
    const flushed = c.flush()
    for (let step = 0; step < 100 && (released.length > 0 || inFlight > 0); step++) {
      released.shift()?.()
      await new Promise((r) => setImmediate(r))
    }
    await flushed
    expect(maxInFlight).toBe(1)
    // 21 windows passed during the slow create: they collapse into one update of the full content.
    expect(writes).toEqual([
      { op: 'create', content: '0;' },
      { op: 'update', content: expected },
    ])
  })

  it('hands each byte to the store once: every update is only the text since the previous write, at the stored length', async () => {
    const time = manualScheduler()
    const appended: { offset: number; text: string }[] = []
    let first = ''
    const sink: CoalescerSink = {
      create: async (_kind, text) => ((first = text), 'm1'),
      update: async (_id, append) => void appended.push(append),
    }
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    let expected = ''
    for (let i = 0; i < 3000; i++) {
      c.chunk('MESSAGE', `${i};`)
      expected += `${i};`
      if (i % 100 === 99) {
        time.advance(50)
        await new Promise((r) => setImmediate(r))
      }
    }
    await c.flush()
    expect(appended.length).toBeGreaterThan(5)
    let length = first.length
    for (const a of appended) {
      expect(a.offset).toBe(length)
      length += a.text.length
    }
    expect(first + appended.map((a) => a.text).join('')).toBe(expected)
    expect(first.length + appended.reduce((n, a) => n + a.text.length, 0)).toBe(expected.length)
  })

  it('a failed update loses no text: the next write carries it in front of what came after', async () => {
    const time = manualScheduler()
    const stored = new Map<string, string>()
    let failNext = false
    const errors: unknown[] = []
    const sink: CoalescerSink = {
      create: async (_kind, text) => (stored.set('m1', text), 'm1'),
      update: async (id, { offset, text }) => {
        if (failNext) {
          failNext = false
          throw new Error('injected write failure')
        }
        expect(offset).toBe(stored.get(id)!.length)
        stored.set(id, stored.get(id)! + text)
      },
    }
    const c = new SessionCoalescer(sink, (e) => errors.push(e), time.scheduler)
    c.chunk('MESSAGE', 'a')
    await new Promise((r) => setImmediate(r))
    c.chunk('MESSAGE', 'b')
    failNext = true
    time.advance(100)
    await new Promise((r) => setImmediate(r))
    c.chunk('MESSAGE', 'c')
    await c.flush()
    expect(errors).toHaveLength(1)
    expect(stored.get('m1')).toBe('abc')
  })

  it('a producer waits for room when many messages queue behind a slow store', async () => {
    const time = manualScheduler()
    const released: (() => void)[] = []
    const stored: string[] = []
    const sink: CoalescerSink = {
      create: async (_kind, text) => {
        await new Promise<void>((resolve) => released.push(resolve))
        stored.push(text)
        return `m${stored.length}`
      },
      update: async () => undefined,
    }
    const c = new SessionCoalescer(sink, (e) => { throw e }, time.scheduler)
    let produced = 0
    const producer = (async () => {
      for (let i = 0; i < 20; i++) {
        await c.room()
        c.chunk('MESSAGE', `message ${i}`, `agent-${i}`)
        produced++
      }
    })()
    for (let step = 0; step < 100 && stored.length < 20; step++) {
      await new Promise((r) => setImmediate(r))
      expect(c.queuedWrites).toBeLessThanOrEqual(MAX_QUEUED_WRITES)
      expect(produced - stored.length).toBeLessThanOrEqual(MAX_QUEUED_WRITES + 1)
      released.shift()?.()
    }
    await producer
    await c.flush()
    expect(stored).toEqual(Array.from({ length: 20 }, (_, i) => `message ${i}`))
  })
})
