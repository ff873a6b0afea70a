import { describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS, OutboundScheduler, type SchedulerLimits } from '../../src/outbound/outbound-scheduler.ts'
import { simulatedPeer } from '../support/simulated-peer.ts'

const window = { floor: 1000, ceiling: 1_000_000, targetDelayMs: 20, probeMark: 1000 }
const limits = (overrides: Partial<SchedulerLimits> = {}): SchedulerLimits => ({ ...DEFAULT_LIMITS, sendWindow: window, ...overrides })
const frame = (label: string, bytes: number) => label.padEnd(bytes, '.')

describe('the send window (acknowledged bytes in flight)', () => {
  it('holds semantic frames once a window is unacknowledged, writes control frames at once, and resumes on the probe’s pong only', () => {
    const peer = simulatedPeer(0, { answers: false })
    const scheduler = new OutboundScheduler(peer.socket, limits(), {}, peer.clock)
    for (let i = 0; i < 50; i++) scheduler.enqueueSemantic(frame(`sem-${i}`, 100))
    peer.tick(scheduler) // nothing read, nothing answered
    // 1,000 bytes in flight: 10 frames; the window closed with its probe out.
    expect(scheduler.window).toEqual({ size: 1000, inFlight: 1000 })
    expect(peer.pings).toHaveLength(1)
    expect(scheduler.depth.semantic).toBe(40)

    scheduler.enqueueControl('result')
    expect(scheduler.depth).toMatchObject({ control: 0, semantic: 40 })

    // A keepalive pong (no payload) or a payload that was never sent acknowledges nothing.
    scheduler.acknowledge('')
    scheduler.acknowledge('zz')
    expect(scheduler.depth.semantic).toBe(40)

    scheduler.acknowledge(peer.pings[0]!)
    expect(scheduler.depth.semantic).toBeLessThan(40)
    expect(scheduler.window!.inFlight).toBeLessThan(scheduler.window!.size + 100)
  })

  it('a peer whose pongs are late (a busy client) is not closed: a full semantic lane is written past the window, in order', () => {
    const peer = simulatedPeer(0, { answers: false })
    const closes: string[] = []
    const scheduler = new OutboundScheduler(peer.socket, limits({ semantic: 4 }), { overflowClosed: (c) => closes.push(c) }, peer.clock)
    for (let i = 0; i < 50; i++) scheduler.enqueueSemantic(frame(`sem-${i}`, 250))
    expect(peer.closed).toBeUndefined()
    expect(closes).toEqual([])
    // The window still holds what the lane has room for.
    expect(scheduler.depth.semantic).toBe(3)
    expect(scheduler.window!.inFlight).toBeGreaterThan(scheduler.window!.size)

    // Once it reads again, it gets every frame in order.
    peer.bytesPerMs = 1_000_000
    peer.tick(scheduler)
    scheduler.acknowledge(peer.pings.at(-1)!)
    for (let t = 0; t < 50; t++) {
      peer.tick(scheduler)
      for (const pong of peer.pings.splice(0)) scheduler.acknowledge(pong)
    }
    expect(peer.read.map((r) => r.frame.replace(/\.+$/, ''))).toEqual(Array.from({ length: 50 }, (_, i) => `sem-${i}`))
  })

  it('a peer that stopped reading fills the socket, and then the semantic lane overflows with 1013', () => {
    const peer = simulatedPeer(0, { answers: false })
    const closes: string[] = []
    const scheduler = new OutboundScheduler(peer.socket, limits({ semantic: 4 }), { overflowClosed: (c) => closes.push(c) }, peer.clock)
    // ws's own buffer over the high-water mark: the kernel takes no more from this socket.
    Object.assign(peer.socket, { bufferedAmount: DEFAULT_LIMITS.socketHighWater })
    for (let i = 0; i < 4; i++) scheduler.enqueueSemantic(frame(`sem-${i}`, 250))
    expect(peer.closed).toBeUndefined()
    expect(scheduler.depth.semantic).toBe(4)
    scheduler.enqueueSemantic(frame('one too many', 250))
    expect(peer.closed).toEqual({ code: 1013 })
    expect(closes).toEqual(['semantic'])
  })

  /**
   * Offers 800 bytes of semantic frames a ms (more than the slow reader takes; the lane's own
   * bound caps what waits) for `ms` and a control frame every 20 ms; returns the control frames'
   * delays from written to read.
   */
  function flood(peer: ReturnType<typeof simulatedPeer>, scheduler: OutboundScheduler, ms: number) {
    const delays: number[] = []
    for (let t = 0; t < ms; t++) {
      for (let i = 0; i < 4 && scheduler.depth.semantic < 16; i++) scheduler.enqueueSemantic(frame('sem', 200))
      if (t % 20 === 0) scheduler.enqueueControl(`control ${t}`)
      peer.tick(scheduler)
    }
    for (const r of peer.read) if (r.frame.startsWith('control')) delays.push(r.readAt - r.writtenAt)
    return delays
  }

  it('sizes the window to a slow reader’s pace × the target delay, so a control frame is read within about that delay', () => {
    const peer = simulatedPeer(256) // 256 KB/s
    const scheduler = new OutboundScheduler(peer.socket, limits(), {}, peer.clock)
    const delays = flood(peer, scheduler, 3000)
    // 256 bytes/ms × 20 ms.
    expect(scheduler.window!.size).toBeGreaterThan(256 * 20 * 0.6)
    expect(scheduler.window!.size).toBeLessThan(256 * 20 * 1.6)
    expect(Math.max(...delays.slice(10))).toBeLessThanOrEqual(2 * window.targetDelayMs)
    // And the reader is kept busy: the pongs come back before it runs dry.
    const bytesRead = peer.read.reduce((n, r) => n + Buffer.byteLength(r.frame), 0)
    expect(bytesRead).toBeGreaterThan(0.9 * 256 * 3000)
  })

  it('sizes the window to a bursty reader’s mean pace, not the speed of its bursts', () => {
    // 256 KB/s on average, but whatever waits at once after each pause.
    const peer = simulatedPeer(256, { slurp: true })
    const scheduler = new OutboundScheduler(peer.socket, limits(), {}, peer.clock)
    const delays = flood(peer, scheduler, 3000)
    expect(scheduler.window!.size).toBeLessThan(256 * 20 * 2)
    expect(Math.max(...delays.slice(10))).toBeLessThanOrEqual(3 * window.targetDelayMs)
  })

  it('(baseline) without the window the same reader’s control frames wait behind everything the socket took', () => {
    const peer = simulatedPeer(256)
    const scheduler = new OutboundScheduler(peer.socket, limits({ sendWindow: undefined }), {}, peer.clock)
    const delays = flood(peer, scheduler, 3000)
    expect(Math.max(...delays)).toBeGreaterThan(1000)
  })

  it('grows to the ceiling for a reader that keeps pace, and shrinks again when it slows down', () => {
    const peer = simulatedPeer(200_000) // 200 MB/s: 20 ms of it is beyond the ceiling
    const scheduler = new OutboundScheduler(peer.socket, limits(), {}, peer.clock)
    // The pace is the mean over 10 target delays: the window reaches the ceiling within a few of them.
    for (let t = 0; t < 300; t++) {
      for (let i = 0; i < 400 && scheduler.depth.semantic < 200; i++) scheduler.enqueueSemantic(frame('sem', 10_000))
      peer.tick(scheduler)
    }
    expect(scheduler.window!.size).toBe(window.ceiling)
    peer.bytesPerMs = 256
    flood(peer, scheduler, 20_000)
    expect(scheduler.window!.size).toBeLessThan(256 * 20 * 1.6)
  })

  it('in FIFO mode (the baseline) writes everything at once and sends no probe', () => {
    const peer = simulatedPeer(0, { answers: false })
    const scheduler = new OutboundScheduler(peer.socket, limits({ fifo: true }), {}, peer.clock)
    for (let i = 0; i < 50; i++) scheduler.enqueueSemantic(frame(`sem-${i}`, 100))
    expect(scheduler.depth.semantic).toBe(0)
    expect(peer.pings).toEqual([])
    expect(scheduler.window).toBeUndefined()
  })
})

describe('send-window probes (only where the window can matter)', () => {
  const mark = 16 * 1024
  const limitsOf = { floor: 4 * 1024, ceiling: 1024 * 1024, targetDelayMs: 20, probeMark: mark }

  it('a fresh fast connection receiving a trickle of small frames sends no probe', () => {
    const peer = simulatedPeer(1_000_000)
    const scheduler = new OutboundScheduler(peer.socket, limits({ sendWindow: limitsOf }), {}, peer.clock)
    // 100 frames of 150 bytes, 20 ms apart: 15 KB over 2 s, under the mark.
    for (let t = 0; t < 2_000; t++) {
      if (t % 20 === 0) scheduler.enqueueSemantic(frame(`sem-${t}`, 150))
      peer.tick(scheduler)
    }
    expect(peer.read).toHaveLength(100)
    expect(peer.pings).toEqual([])
  })

  it('probes once the bytes in flight pass the mark, then not per frame', () => {
    const peer = simulatedPeer(1_000_000)
    const scheduler = new OutboundScheduler(peer.socket, limits({ sendWindow: limitsOf }), {}, peer.clock)
    for (let i = 0; i < 100; i++) scheduler.enqueueSemantic(frame(`sem-${i}`, 150)) // 15,000 bytes
    expect(peer.pings).toEqual([])
    for (let i = 0; i < 20; i++) scheduler.enqueueSemantic(frame(`more-${i}`, 150)) // past 16 KiB
    expect(peer.pings).toHaveLength(1)
    for (let t = 0; t < 100; t++) {
      scheduler.enqueueSemantic(frame(`trickle-${t}`, 150))
      peer.tick(scheduler)
    }
    // 100 frames more, 15 KB: a probe per half window at most (held once, the reader counts as slow), never per frame.
    expect(peer.pings.length).toBeLessThanOrEqual(1 + Math.ceil(15_000 / (scheduler.window!.size / 2)))
  })

  it('a slow reader keeps probing every half window, and its window stays near its pace', () => {
    const peer = simulatedPeer(256)
    const scheduler = new OutboundScheduler(peer.socket, limits({ sendWindow: limitsOf }), {}, peer.clock)
    for (let t = 0; t < 3_000; t++) {
      for (let i = 0; i < 4 && scheduler.depth.semantic < 16; i++) scheduler.enqueueSemantic(frame('sem', 200))
      peer.tick(scheduler)
    }
    const bytesRead = peer.read.reduce((n, r) => n + Buffer.byteLength(r.frame), 0)
    // About one probe per half window read.
    expect(peer.pings.length).toBeGreaterThan(bytesRead / scheduler.window!.size)
    expect(scheduler.window!.size).toBeLessThan(256 * 20 * 1.6)
  })

  it('a closed window always has a probe out, and its pong reopens it', () => {
    const peer = simulatedPeer(0, { answers: false })
    const scheduler = new OutboundScheduler(peer.socket, limits({ sendWindow: limitsOf }), {}, peer.clock)
    for (let i = 0; i < 200; i++) scheduler.enqueueSemantic(frame(`sem-${i}`, 150))
    expect(scheduler.window!.inFlight).toBeGreaterThanOrEqual(scheduler.window!.size)
    expect(peer.pings.length).toBeGreaterThan(0)
    const queued = scheduler.depth.semantic
    expect(queued).toBeGreaterThan(0)
    peer.bytesPerMs = 1_000_000
    peer.tick(scheduler)
    scheduler.acknowledge(peer.pings.at(-1)!)
    for (let t = 0; t < 100 && peer.read.length < 200; t++) {
      peer.tick(scheduler)
      for (const pong of peer.pings.splice(0)) scheduler.acknowledge(pong)
    }
    expect(scheduler.depth.semantic).toBe(0)
    expect(peer.read).toHaveLength(200)
  })
})
