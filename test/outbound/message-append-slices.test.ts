import { describe, expect, it } from 'vitest'
import { APPEND_SLICE_BYTES, AppendChain, MIN_SLICE_BYTES, sliceAppend, sliceBound, streamFrame, streamTag, utf8Cut, type Append } from '../../src/outbound/append-frame.ts'
import { DEFAULT_LIMITS, OutboundScheduler, type SchedulerLimits } from '../../src/outbound/outbound-scheduler.ts'
import { simulatedPeer } from '../support/simulated-peer.ts'
import { heldSocket } from '../support/held-socket.ts'

const MAX = APPEND_SLICE_BYTES
const bytes = (text: string) => Buffer.byteLength(text, 'utf8')
const PAIR = '\u{1F600}' // 😀: two UTF-16 code units, 4 UTF-8 bytes

/** Cuts `text` the way the lane does, slice after slice. */
function slicesOf(text: string, offset = 0): Append[] {
  const out: Append[] = []
  let rest: Append | undefined = { offset, text }
  while (rest) {
    const sliced = sliceAppend(rest)
    out.push(sliced.head)
    rest = sliced.rest
  }
  return out
}

const highSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff
const lowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff

describe('slicing an append at 16 KiB of UTF-8', () => {
  it.each([
    { name: 'ASCII that fills the bound exactly is one slice', text: 'a'.repeat(MAX), lengths: [MAX] },
    { name: 'one byte over the bound is a second slice', text: 'a'.repeat(MAX + 1), lengths: [MAX, 1] },
    { name: 'two-byte characters cut on a character', text: 'é'.repeat(MAX / 2 + 1), lengths: [MAX / 2, 1] },
    // 5461 × 3 = 16383 bytes: a 5462nd three-byte character would overflow by 2.
    { name: 'three-byte characters cut below the bound', text: '€'.repeat(5462), lengths: [5461, 1] },
    { name: 'a surrogate pair that ends exactly on the bound stays in the slice', text: 'a'.repeat(MAX - 4) + PAIR + 'b', lengths: [MAX - 2, 1] },
    { name: 'a surrogate pair across the bound goes whole to the next slice', text: 'a'.repeat(MAX - 2) + PAIR, lengths: [MAX - 2, 2] },
    { name: 'a pair one byte past the bound too', text: 'a'.repeat(MAX - 3) + PAIR, lengths: [MAX - 3, 2] },
    { name: 'a lone surrogate counts as U+FFFD (3 bytes), as it is sent', text: 'a'.repeat(MAX - 3) + '\ud800' + 'b', lengths: [MAX - 2, 1] },
    { name: 'an empty append (a status change) is one empty slice', text: '', lengths: [0] },
  ])('$name', ({ text, lengths }) => {
    const slices = slicesOf(text, 7)
    expect(slices.map((s) => s.text.length)).toEqual(lengths)
    expect(slices.map((s) => s.text).join('')).toBe(text)
    let offset = 7
    for (const s of slices) {
      expect(s.offset).toBe(offset)
      expect(bytes(s.text)).toBeLessThanOrEqual(MAX)
      offset += s.text.length
    }
  })

  it('random mixed text: slices rebuild it, each within the bound, as full as the next character allows, no pair cut in two', () => {
    const alphabet = ['a', 'é', '€', PAIR, '\n', '"', '\\', '\u0001']
    let seed = 42
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    for (let round = 0; round < 20; round++) {
      const text = Array.from({ length: 5_000 + Math.floor(random() * 30_000) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
      const slices = slicesOf(text)
      expect(slices.map((s) => s.text).join('')).toBe(text)
      slices.forEach((s, i) => {
        expect(bytes(s.text)).toBeLessThanOrEqual(MAX)
        expect(highSurrogate(s.text.charCodeAt(s.text.length - 1))).toBe(false)
        expect(lowSurrogate(s.text.charCodeAt(0))).toBe(false)
        // Not cut early: the next character would not have fitted.
        const next = slices[i + 1]
        if (next) expect(bytes(s.text) + bytes(String.fromCodePoint(next.text.codePointAt(0)!))).toBeGreaterThan(MAX)
      })
    }
  })

  it('a bound smaller than one character still progresses by one code point', () => {
    expect(utf8Cut(PAIR + 'a', 1)).toBe(2)
    expect(utf8Cut('€a', 2)).toBe(1)
  })

  it("a slice fills the send window's room (less the frame's other bytes), never below 2 KiB nor above 16 KiB", () => {
    expect(sliceBound(undefined, 500)).toBe(MAX) // no window
    expect(sliceBound(4_000, 500)).toBe(3_500)
    expect(sliceBound(2_000, 500)).toBe(MIN_SLICE_BYTES) // a nearly full window: no frame of a few bytes
    expect(sliceBound(0, 500)).toBe(MIN_SLICE_BYTES)
    expect(sliceBound(1_000_000, 500)).toBe(MAX) // a fast reader: the contract's bound
  })
})


/** One frame in flight at a time; no send window (its pacing has its own tests). */
const limits = (overrides: Partial<SchedulerLimits> = {}): SchedulerLimits => ({ ...DEFAULT_LIMITS, socketHighWater: 1, sendWindow: undefined, ...overrides })

interface Event {
  __typename: string
  message: { id: string; version: number; content?: string }
  append?: { offset: number; text: string } | null
}

/**
 * One subscription as the resolvers and route() drive it (see message-append-merge.test.ts):
 * `append { offset text }` selected, and `message.content` too when `withContent`.
 */
function subscription(scheduler: OutboundScheduler, { messageId = 'm1', withContent = false } = {}) {
  const chain = new AppendChain()
  return {
    chain,
    publish(version: number, change: Append) {
      const append = chain.advance(messageId, version, change)
      if (append === 'stale') throw new Error('stale')
      const tag = streamTag(messageId, version, append, chain)
      tag.templated = true
      const message: Event['message'] = { id: messageId, version }
      if (withContent) {
        tag.withContent = true
        message.content = `content of v${version}`
      }
      if (append) tag.appendPaths.push(['sessionEvents', 'append'])
      const event: Event = { __typename: 'MessageUpdated', message, append: append && { offset: tag.offset(append), text: tag.text(append) } }
      const frame = JSON.stringify({ id: 'op', type: 'next', payload: { data: { sessionEvents: event } } })
      scheduler.enqueueReplaceable(streamFrame(frame, tag), 's1', `${messageId} op`)
    },
  }
}

const parse = (frame: string) => JSON.parse(frame) as { type: string; payload?: { data: { sessionEvents: Event } } }
const eventOf = (frame: string) => parse(frame).payload!.data.sessionEvents

/** Checks every append frame's bound and chain, and returns the text they rebuild on top of `base`. */
function rebuild(frames: string[], base: string): string {
  let content = base
  for (const frame of frames) {
    const append = eventOf(frame).append
    if (!append) throw new Error(`not an append frame: ${frame.slice(0, 200)}`)
    expect(bytes(append.text)).toBeLessThanOrEqual(MAX)
    expect(append.offset).toBe(content.length)
    content += append.text
  }
  return content
}

describe('appends over 16 KiB in the replaceable lane', () => {
  it('a single large publication goes out as consecutive slices of one version, offsets contiguous, in order', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 3)
    const text = 'x'.repeat(40_000)
    sub.publish(2, { offset: 3, text })
    s.drainAll()
    expect(s.written).toHaveLength(3)
    expect(rebuild(s.written, 'abc')).toBe('abc' + text)
    expect(s.written.map((f) => eventOf(f).message)).toEqual([1, 2, 3].map(() => ({ id: 'm1', version: 2 })))
    expect(scheduler.depth.replaceable).toBe(0)
    expect(scheduler.trackedSessions).toBe(0)
  })

  it('undelivered appends merged past the bound are split at it, no surrogate pair cut', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 0)
    scheduler.enqueueControl('busy')
    // 30 publications of 1,500 code units (a pair at every end): 3,000 UTF-8 bytes and more each.
    const piece = 'é'.repeat(1_498) + PAIR
    let offset = 0
    for (let v = 2; v < 32; v++) {
      sub.publish(v, { offset, text: piece })
      offset += piece.length
    }
    s.drainAll()
    const frames = s.written.slice(1)
    expect(frames.length).toBeGreaterThan(1)
    expect(rebuild(frames, '')).toBe(piece.repeat(30))
    for (const f of frames) expect(highSurrogate(eventOf(f).append!.text.charCodeAt(eventOf(f).append!.text.length - 1))).toBe(false)
    // Merged (one entry, the newest version), then sliced: every slice names that version.
    expect(frames.every((f) => eventOf(f).message.version === 31)).toBe(true)
  })

  it('writes one slice per turn: a control frame queued after the first slice goes before the rest', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 0)
    sub.publish(2, { offset: 0, text: 'y'.repeat(3 * MAX) })
    expect(s.written).toHaveLength(1) // the first slice only
    scheduler.enqueueControl('{"id":"q","type":"next"}')
    s.drainAll()
    expect(s.written.map((f) => parse(f).type)).toEqual(['next', 'next', 'next', 'next'])
    expect(s.written[1]).toBe('{"id":"q","type":"next"}')
    expect(rebuild([s.written[0]!, ...s.written.slice(2)], '')).toBe('y'.repeat(3 * MAX))
  })

  it('a newer update of the message merges into the unsent rest, which keeps its place before later frames', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    const other = subscription(scheduler, { messageId: 'm2' })
    sub.chain.seed('m1', 1, 0)
    other.chain.seed('m2', 1, 0)
    const first = 'a'.repeat(MAX + 100)
    sub.publish(2, { offset: 0, text: first })
    expect(s.written).toHaveLength(1)
    // Queued while the rest (100 code units) waits: m2's update, then m1's next append.
    other.publish(2, { offset: 0, text: 'other' })
    sub.publish(3, { offset: first.length, text: 'b'.repeat(MAX) })
    s.drainAll()
    const m1 = s.written.filter((f) => eventOf(f).message.id === 'm1')
    expect(rebuild(m1, '')).toBe(first + 'b'.repeat(MAX))
    // The rest absorbed version 3: its frames are 100 + 16,284 and then 100 code units, all version 3.
    expect(m1.map((f) => [eventOf(f).message.version, eventOf(f).append!.text.length])).toEqual([
      [2, MAX],
      [3, MAX],
      [3, 100],
    ])
    // The rest kept its place: m1's remaining slices are written before m2's frame.
    expect(s.written.map((f) => eventOf(f).message.id)).toEqual(['m1', 'm1', 'm1', 'm2'])
  })

  it("the rest is written before a later semantic frame of the session (the session's barrier)", () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 0)
    sub.publish(2, { offset: 0, text: 'z'.repeat(2 * MAX + 1) })
    scheduler.enqueueSemantic('{"id":"op","type":"next","payload":{"data":{"sessionEvents":{"__typename":"TurnCompleted"}}}}', 's1')
    s.drainAll()
    expect(s.written.map((f) => eventOf(f).__typename)).toEqual(['MessageUpdated', 'MessageUpdated', 'MessageUpdated', 'TurnCompleted'])
  })

  it('an evicted rest makes the next frame of the message a gap (append null)', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ replaceablePerSession: 1 }))
    const sub = subscription(scheduler)
    const other = subscription(scheduler, { messageId: 'm2' })
    sub.chain.seed('m1', 1, 0)
    other.chain.seed('m2', 1, 0)
    sub.publish(2, { offset: 0, text: 'a'.repeat(MAX + 10) })
    other.publish(2, { offset: 0, text: 'x' }) // one key per session: evicts m1's rest
    sub.publish(3, { offset: MAX + 10, text: 'b' })
    s.drainAll()
    const m1 = s.written.filter((f) => eventOf(f).message.id === 'm1').map(eventOf)
    expect(m1.map((e) => e.append && e.append.text.length)).toEqual([MAX, null])
  })

  it('a frame that selects message.content is not sliced: it carries the content, and append null past the bound', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler, { withContent: true })
    sub.chain.seed('m1', 1, 0)
    sub.publish(2, { offset: 0, text: 'c'.repeat(MAX + 1) })
    sub.publish(3, { offset: MAX + 1, text: 'd' })
    s.drainAll()
    expect(s.written.map(eventOf)).toEqual([{ __typename: 'MessageUpdated', message: { id: 'm1', version: 2, content: 'content of v2' }, append: null }, expect.anything()])
    expect(eventOf(s.written[1]!).append).toEqual({ offset: MAX + 1, text: 'd' })
  })

  it('in FIFO mode (the bench baseline) the slices are queued at once, in order', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ fifo: true }))
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 0)
    sub.publish(2, { offset: 0, text: 'f'.repeat(2 * MAX + 5) })
    s.drainAll()
    expect(rebuild(s.written, '')).toBe('f'.repeat(2 * MAX + 5))
    expect(s.written).toHaveLength(3)
  })
})

describe('slices cut to the send window', () => {
  const CONTROL = /^\{"id":"q(\d+)"/

  /**
   * A stream in bursts far above a 256 KB/s reader's pace (20,000 characters, ~40 KB of UTF-8, every
   * 100 ms for 1 s)
   * and a response every 20 ms, on a simulated clock; returns how long each response waited between
   * written and read, and the stream frames as read.
   */
  function streamTo(peer: ReturnType<typeof simulatedPeer>, scheduler: OutboundScheduler) {
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 0)
    let offset = 0
    let version = 1
    let sent = ''
    for (let t = 0; t < 4_000; t++) {
      if (t % 100 === 0 && t < 1_000) {
        const text = `${t};`.padEnd(20_000, 'é€a')
        sub.publish(++version, { offset, text })
        offset += text.length
        sent += text
      }
      if (t % 20 === 0) scheduler.enqueueControl(`{"id":"q${t}","type":"next","payload":{"data":{"task":null}}}`)
      peer.tick(scheduler)
    }
    const waits = peer.read.filter((r) => CONTROL.test(r.frame)).map((r) => r.readAt - r.writtenAt)
    const frames = peer.read.filter((r) => !CONTROL.test(r.frame)).map((r) => r.frame)
    return { waits, frames, sent }
  }

  it('GIVEN a 256 KB/s reader, WHEN a large append streams, THEN slices fit the window (≥ 2 KiB), so every response is read within about the window delay, and the slices rebuild the text', () => {
    const peer = simulatedPeer(256)
    const scheduler = new OutboundScheduler(peer.socket, DEFAULT_LIMITS, {}, peer.clock)
    const { waits, frames, sent } = streamTo(peer, scheduler)
    const window = DEFAULT_LIMITS.sendWindow!
    // 256 B/ms × 20 ms is about 5 KB: the window stays near its floor.
    expect(scheduler.window!.size).toBeLessThan(2 * 256 * window.targetDelayMs)
    // Each slice is what the window had room for, at least MIN_SLICE_BYTES: never a 16 KiB slice once
    // the reader is measured. (The first burst, before any pong, goes in slices of the fresh window: the probe mark.)
    const slices = frames.slice(4).map((f) => Buffer.byteLength(f))
    expect(Math.max(...slices)).toBeLessThanOrEqual(scheduler.window!.size + MIN_SLICE_BYTES)
    // A response waits for the bytes in flight: about the window (20 ms of this reader), plus at most
    // one minimal slice. Behind a 16 KiB slice it would wait 64 ms and more.
    expect(waits.length).toBe(200)
    expect(Math.max(...waits.slice(5))).toBeLessThanOrEqual(2 * window.targetDelayMs)
    // Everything arrives, in order, byte for byte.
    expect(rebuild(frames, '')).toBe(sent)
    expect(scheduler.depth.replaceable).toBe(0)
  })

  it('GIVEN a fast reader, WHEN the same stream runs, THEN its window outgrows the probe mark: fewer, fuller frames than a slow reader gets', () => {
    const fast = simulatedPeer(200_000)
    const fastScheduler = new OutboundScheduler(fast.socket, DEFAULT_LIMITS, {}, fast.clock)
    const { frames, sent } = streamTo(fast, fastScheduler)
    expect(rebuild(frames, '')).toBe(sent)
    const texts = frames.map((f) => Buffer.byteLength(eventOf(f).append!.text))
    // The quiet time between bursts is not taken for slow reading: the window grows past the
    // probe mark, and most bursts (~40 KB each) go out in 16 KiB slices, four frames or fewer each.
    expect(fastScheduler.window!.size).toBeGreaterThan(DEFAULT_LIMITS.sendWindow!.probeMark ?? 16 * 1024)
    expect(texts.filter((n) => n > MAX - 4).length).toBeGreaterThanOrEqual(8)
    expect(frames.length).toBeLessThanOrEqual(4 * 10 + 2)
    const slow = simulatedPeer(256)
    expect(streamTo(slow, new OutboundScheduler(slow.socket, DEFAULT_LIMITS, {}, slow.clock)).frames.length).toBeGreaterThan(2 * frames.length)
  })
})
