import { describe, expect, it } from 'vitest'
import { byteLengthOf, DEFAULT_LIMITS, OutboundScheduler, type OutboundSocket, type SchedulerLimits } from '../../src/outbound/outbound-scheduler.ts'
import { heldSocket } from '../support/held-socket.ts'


const limits = (overrides: Partial<SchedulerLimits> = {}): SchedulerLimits => ({ ...DEFAULT_LIMITS, socketHighWater: 1, ...overrides })

describe('OutboundScheduler', () => {
  it('writes control frames before queued semantic and replaceable frames', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    scheduler.enqueueSemantic('sem-1', 'a') // written at once: the socket was idle
    scheduler.enqueueSemantic('sem-2', 'a')
    scheduler.enqueueReplaceable('rep-1', 'b', 'm1')
    scheduler.enqueueControl('result-1')
    s.drainAll()
    expect(s.written).toEqual(['sem-1', 'result-1', 'sem-2', 'rep-1'])
  })

  it('replaces an unsent MessageUpdated of the same key in place', () => {
    const s = heldSocket()
    const replaced: string[] = []
    const scheduler = new OutboundScheduler(s.socket, limits(), { replaced: (id) => replaced.push(id) })
    scheduler.enqueueControl('busy')
    scheduler.enqueueReplaceable('m1 v2', 'a', 'm1')
    scheduler.enqueueReplaceable('m2 v2', 'a', 'm2')
    scheduler.enqueueReplaceable('m1 v3', 'a', 'm1')
    scheduler.enqueueReplaceable('m1 v4', 'a', 'm1')
    s.drainAll()
    expect(s.written).toEqual(['busy', 'm1 v4', 'm2 v2'])
    expect(replaced).toEqual(['a', 'a'])
  })

  it('treats a semantic frame of a session as a barrier for that session’s replaceables', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    scheduler.enqueueControl('busy')
    scheduler.enqueueReplaceable('a: m1 v2', 'a', 'm1')
    scheduler.enqueueReplaceable('b: m9 v2', 'b', 'm9')
    scheduler.enqueueSemantic('a: turn completed', 'a')
    scheduler.enqueueReplaceable('a: m2 v2', 'a', 'm2')
    s.drainAll()
    const order = s.written
    expect(order.indexOf('a: m1 v2')).toBeLessThan(order.indexOf('a: turn completed'))
    expect(order.indexOf('a: turn completed')).toBeLessThan(order.indexOf('a: m2 v2'))
    expect(order).toContain('b: m9 v2')
  })

  it('after a burst of semantic frames forces one replaceable frame', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ semanticBurst: 3 }))
    scheduler.enqueueControl('busy')
    for (let i = 1; i <= 7; i++) scheduler.enqueueSemantic(`sem-${i}`, 'feed')
    scheduler.enqueueReplaceable('rep-x', 'x', 'm')
    s.drainAll()
    expect(s.written).toEqual(['busy', 'sem-1', 'sem-2', 'sem-3', 'rep-x', 'sem-4', 'sem-5', 'sem-6', 'sem-7'])
  })

  it('serves sessions round-robin', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    scheduler.enqueueControl('busy')
    for (let i = 1; i <= 3; i++) scheduler.enqueueReplaceable(`a${i}`, 'a', `ma${i}`)
    for (let i = 1; i <= 3; i++) scheduler.enqueueReplaceable(`b${i}`, 'b', `mb${i}`)
    s.drainAll()
    expect(s.written).toEqual(['busy', 'a1', 'b1', 'a2', 'b2', 'a3', 'b3'])
  })

  it('evicts only the noisy session’s oldest replaceable entry when it exceeds its allowance', () => {
    const s = heldSocket()
    const evicted: string[] = []
    const scheduler = new OutboundScheduler(s.socket, limits({ replaceablePerSession: 2 }), { evicted: (id) => evicted.push(id) })
    scheduler.enqueueControl('busy')
    scheduler.enqueueReplaceable('quiet-1', 'quiet', 'q1')
    for (let i = 1; i <= 5; i++) scheduler.enqueueReplaceable(`noisy-${i}`, 'noisy', `n${i}`)
    expect(scheduler.depth.replaceable).toBe(3)
    s.drainAll()
    expect(s.written).toEqual(['busy', 'quiet-1', 'noisy-4', 'noisy-5'])
    expect(evicted).toEqual(['noisy', 'noisy', 'noisy'])
  })

  it('when the connection allowance is full, evicts from the session holding the most keys and queues the quiet session’s update', () => {
    const s = heldSocket()
    const evicted: string[] = []
    const scheduler = new OutboundScheduler(s.socket, limits({ replaceablePerSession: 4, replaceablePerConnection: 6 }), {
      evicted: (id) => evicted.push(id),
    })
    scheduler.enqueueControl('busy')
    for (let i = 1; i <= 4; i++) scheduler.enqueueReplaceable(`a${i}`, 'a', `m${i}`)
    for (let i = 1; i <= 2; i++) scheduler.enqueueReplaceable(`b${i}`, 'b', `m${i}`)
    scheduler.enqueueReplaceable('c1', 'c', 'x')
    expect(scheduler.depth.replaceable).toBe(6)
    s.drainAll()
    expect(evicted).toEqual(['a'])
    expect(s.written).toEqual(['busy', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4'])
  })

  it('a barrier flushes only its own session’s earlier replaceables, outside the semantic lane’s bound', () => {
    const s = heldSocket()
    const closes: string[] = []
    const scheduler = new OutboundScheduler(s.socket, limits({ semantic: 4 }), { overflowClosed: (c) => closes.push(c) })
    scheduler.enqueueControl('busy')
    scheduler.enqueueSemantic('quiet: added', 'quiet')
    for (let i = 1; i <= 10; i++) scheduler.enqueueReplaceable(`noisy: m${i}`, 'noisy', `m${i}`)
    scheduler.enqueueSemantic('noisy: turn completed', 'noisy')
    scheduler.enqueueReplaceable('quiet: m1', 'quiet', 'm1')
    expect(closes).toEqual([])
    expect(scheduler.depth).toEqual({ control: 0, semantic: 2, replaceable: 11 })
    s.drainAll()
    expect(s.closed).toBeUndefined()
    const order = s.written
    for (let i = 1; i <= 10; i++) expect(order.indexOf(`noisy: m${i}`)).toBeLessThan(order.indexOf('noisy: turn completed'))
    expect(order).toContain('quiet: m1')
    expect(order).toHaveLength(14)
  })

  it('a noisy session’s barriers never make the connection close: its replaceables stay within its own allowance', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ semantic: 8, replaceablePerSession: 32 }))
    scheduler.enqueueControl('busy')
    for (let turn = 0; turn < 4; turn++) {
      for (let i = 0; i < 40; i++) scheduler.enqueueReplaceable(`noisy ${turn}.${i}`, 'noisy', `m${turn}.${i}`)
      scheduler.enqueueSemantic(`noisy turn ${turn}`, 'noisy')
    }
    expect(s.closed).toBeUndefined()
    expect(scheduler.depth.semantic).toBe(4)
    expect(scheduler.depth.replaceable).toBeLessThanOrEqual(32)
    scheduler.enqueueControl('response')
    s.drainOne()
    expect(s.written.at(-1)).toBe('response')
  })

  it('forgets a session once it has nothing queued', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    scheduler.enqueueControl('busy')
    for (const id of ['a', 'b', 'c']) {
      scheduler.enqueueReplaceable(`${id}: m1`, id, 'm1')
      scheduler.enqueueSemantic(`${id}: turn`, id)
      scheduler.enqueueReplaceable(`${id}: m2`, id, 'm2')
    }
    expect(scheduler.trackedSessions).toBe(3)
    s.drainAll()
    expect(s.written).toHaveLength(10)
    expect(scheduler.trackedSessions).toBe(0)
  })

  it('forgets a session whose last entry was evicted for another session', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ replaceablePerConnection: 2 }))
    scheduler.enqueueControl('busy')
    scheduler.enqueueReplaceable('a1', 'a', 'm')
    scheduler.enqueueReplaceable('b1', 'b', 'm')
    scheduler.enqueueReplaceable('c1', 'c', 'm')
    expect(scheduler.trackedSessions).toBe(2)
    s.drainAll()
    expect(s.written).toEqual(['busy', 'b1', 'c1'])
    expect(scheduler.trackedSessions).toBe(0)
  })

  it('closes the connection with 1013 when control traffic cannot be queued', () => {
    const s = heldSocket()
    const closes: string[] = []
    const scheduler = new OutboundScheduler(s.socket, limits({ control: 2 }), { overflowClosed: (c) => closes.push(c) })
    scheduler.enqueueControl('c0') // written, not drained
    scheduler.enqueueControl('c1')
    scheduler.enqueueControl('c2')
    expect(s.closed).toBeUndefined()
    scheduler.enqueueControl('c3')
    expect(s.closed).toEqual({ code: 1013, reason: expect.stringMatching(/try again later/i) })
    expect(closes).toEqual(['control'])
    expect(scheduler.depth).toEqual({ control: 0, semantic: 0, replaceable: 0 })
  })

  it('stops writing while the socket buffers its high-water mark, and resumes on drain', () => {
    const s = heldSocket(2)
    const scheduler = new OutboundScheduler(s.socket, limits())
    for (let i = 1; i <= 5; i++) scheduler.enqueueSemantic(`sem-${i}`)
    expect(s.written).toEqual(['sem-1', 'sem-2'])
    expect(scheduler.depth.semantic).toBe(3)
    s.drainOne()
    expect(s.written).toEqual(['sem-1', 'sem-2', 'sem-3'])
    s.drainAll()
    s.drainAll()
    expect(s.written).toHaveLength(5)
  })
})

describe('OutboundScheduler writes (what each one costs)', () => {
  /** A socket whose buffer holds exactly what was written and not yet drained, by bytes. */
  function byteSocket() {
    const writes: { frame: string; withCallback: boolean }[] = []
    const held: { bytes: number; done?: () => void }[] = []
    const socket: OutboundSocket = {
      get bufferedAmount() {
        return held.reduce((sum, h) => sum + h.bytes, 0)
      },
      send(frame, done) {
        writes.push({ frame: String(frame), withCallback: done !== undefined })
        held.push({ bytes: byteLengthOf(frame), done })
      },
      close: () => undefined,
      ping: () => undefined,
    }
    const drain = () => {
      for (const h of held.splice(0)) h.done?.()
    }
    return { socket, writes, drain, takeAll: () => void held.splice(0) }
  }

  it('asks for no completion callback while the socket stays under its high-water mark; the write that may fill it asks, and its completion resumes the rest', () => {
    const s = byteSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ socketHighWater: 4096, sendWindow: undefined }))
    // The kernel takes each small frame at once: the buffer never holds anything.
    for (let i = 0; i < 50; i++) {
      scheduler.enqueueSemantic(`small-${i}`)
      s.takeAll()
    }
    expect(s.writes).toHaveLength(50)
    expect(s.writes.filter((w) => w.withCallback)).toEqual([])
    // A reader that stopped: the buffer fills; the write that reaches the mark carries the callback.
    for (let i = 0; i < 10; i++) scheduler.enqueueSemantic(Buffer.from(`big-${i}`.padEnd(1000, '.')))
    const stopped = s.writes.length
    expect(scheduler.depth.semantic).toBeGreaterThan(0)
    expect(s.writes.at(-1)!.withCallback).toBe(true)
    s.drain()
    expect(s.writes.length).toBeGreaterThan(stopped)
    for (let i = 0; i < 5 && scheduler.depth.semantic > 0; i++) s.drain()
    expect(scheduler.depth.semantic).toBe(0)
    expect(s.writes.filter((w) => w.frame.startsWith('big-')).map((w) => w.frame.slice(0, 6).replace(/\.+$/, ''))).toEqual(
      Array.from({ length: 10 }, (_, i) => `big-${i}`),
    )
  })
})

describe('OutboundScheduler batches', () => {
  it('a frame and the window probe after it are handed to the socket in one batch (one system call)', () => {
    const log: string[] = []
    let inBatch = false
    const socket: OutboundSocket = {
      bufferedAmount: 0,
      send: (frame) => void log.push(`${inBatch ? 'batched' : 'alone'} frame ${String(frame).slice(0, 5)}`),
      ping: (payload) => void log.push(`${inBatch ? 'batched' : 'alone'} ping ${payload}`),
      close: () => undefined,
      batch(writes, target) {
        inBatch = true
        try {
          writes(target)
        } finally {
          inBatch = false
        }
        log.push('flush')
      },
    }
    const scheduler = new OutboundScheduler(socket, limits({ socketHighWater: 1 << 20, sendWindow: { floor: 1000, ceiling: 1000, targetDelayMs: 20, probeMark: 500 } }))
    scheduler.enqueueSemantic('f-1'.padEnd(600, '.'))
    expect(log).toEqual(['batched frame f-1..', 'batched ping 0', 'flush'])
  })
})

describe('OutboundScheduler in FIFO mode (the measurement baseline)', () => {
  it('writes every frame in arrival order, replacing and prioritizing nothing', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ fifo: true }))
    scheduler.enqueueSemantic('sem-1', 'a')
    scheduler.enqueueReplaceable('m1 v2', 'a', 'm1')
    scheduler.enqueueReplaceable('m1 v3', 'a', 'm1')
    scheduler.enqueueControl('result')
    s.drainAll()
    expect(s.written).toEqual(['sem-1', 'm1 v2', 'm1 v3', 'result'])
  })
})
