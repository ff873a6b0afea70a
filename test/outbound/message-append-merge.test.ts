import { describe, expect, it } from 'vitest'
import { AppendChain, TRACKED_MESSAGES, streamFrame, streamTag, type Append } from '../../src/outbound/append-frame.ts'
import { DEFAULT_LIMITS, OutboundScheduler, type SchedulerLimits } from '../../src/outbound/outbound-scheduler.ts'
import { heldSocket } from '../support/held-socket.ts'


const limits = (overrides: Partial<SchedulerLimits> = {}): SchedulerLimits => ({ ...DEFAULT_LIMITS, socketHighWater: 1, ...overrides })

type Published = { version: number; change: Append | 'unchanged' }

/**
 * One subscription as the resolvers and route() drive it: the chain decides each frame's append,
 * the resolvers record the response paths (here: an aliased `a: append { o: offset text }` and a
 * plain `append { offset }`), the frame is serialized as graphql-ws does and queued.
 */
function subscription(scheduler: OutboundScheduler, messageId = 'm1', chain = new AppendChain()) {
  const resolve = ({ version, change }: Published) => {
    const append = chain.advance(messageId, version, change)
    if (append === 'stale') return undefined
    const tag = streamTag(messageId, version, append, chain)
    tag.templated = true
    const event: Record<string, unknown> = { __typename: 'MessageUpdated', message: { id: messageId, version } }
    if (append) tag.appendPaths.push(['sessionEvents', 'a'], ['sessionEvents', 'append'])
    // The leaves render what the tag says (markers), as the schema's resolvers do.
    event.a = append && { o: tag.offset(append), text: tag.text(append) }
    event.append = append && { offset: tag.offset(append) }
    const frame = JSON.stringify({ id: 'op', type: 'next', payload: { data: { sessionEvents: event } } })
    return { frame, tag }
  }
  return {
    chain,
    resolve,
    route(resolved: ReturnType<typeof resolve>) {
      if (resolved) scheduler.enqueueReplaceable(streamFrame(resolved.frame, resolved.tag), 's1', `${messageId} op`)
    },
    publish(p: Published) {
      this.route(resolve(p))
    },
  }
}

const events = (written: string[]) =>
  written.map((f) => (JSON.parse(f) as { payload: { data: { sessionEvents: Record<string, unknown> } } }).payload.data.sessionEvents)

/** Appends of `pieces` from `offset` at consecutive versions starting at `version`. */
function appends(version: number, offset: number, pieces: string[]): Published[] {
  return pieces.map((text, i) => {
    const p = { version: version + i, change: { offset, text } }
    offset += text.length
    return p
  })
}

describe('AppendChain (one subscription, table)', () => {
  const cases: { name: string; seed?: [number, number]; steps: Published[]; expected: (Append | null | 'stale')[] }[] = [
    { name: 'consecutive appends onto a seed', seed: [1, 2], steps: appends(2, 2, ['ab', 'c']), expected: [{ offset: 2, text: 'ab' }, { offset: 4, text: 'c' }] },
    { name: 'nothing seeded: the first append has no base', steps: appends(2, 2, ['ab', 'c']), expected: [null, { offset: 4, text: 'c' }] },
    { name: 'a missing version (dropped publication) is a gap', seed: [1, 2], steps: [appends(2, 2, ['ab'])[0]!, appends(4, 5, ['d'])[0]!], expected: [{ offset: 2, text: 'ab' }, null] },
    { name: 'a version the client holds already is stale', seed: [3, 5], steps: appends(2, 2, ['ab', 'c', 'd']), expected: ['stale', 'stale', { offset: 5, text: 'd' }] },
    { name: 'an append whose offset is not the held length is a gap', seed: [1, 2], steps: appends(2, 3, ['x']), expected: [null] },
    {
      name: 'an unchanged content (status) after appends is an empty append at the end',
      seed: [1, 2],
      steps: [...appends(2, 2, ['ab']), { version: 3, change: 'unchanged' }, ...appends(4, 4, ['z'])],
      expected: [{ offset: 2, text: 'ab' }, { offset: 4, text: '' }, { offset: 4, text: 'z' }],
    },
    { name: 'an unchanged content after a gap stays null', steps: [{ version: 5, change: 'unchanged' }], expected: [null] },
  ]
  it.each(cases)('$name', ({ seed, steps, expected }) => {
    const chain = new AppendChain()
    if (seed) chain.seed('m', ...seed)
    expect(steps.map((s) => chain.advance('m', s.version, s.change))).toEqual(expected)
  })

  it(`remembers only the ${TRACKED_MESSAGES} most recent messages: an older one just gets append null`, () => {
    const chain = new AppendChain()
    for (let i = 0; i <= TRACKED_MESSAGES; i++) chain.seed(`m${i}`, 1, 1)
    expect(chain.size).toBe(TRACKED_MESSAGES)
    expect(chain.advance('m0', 2, { offset: 1, text: 'x' })).toBeNull()
    expect(chain.advance(`m${TRACKED_MESSAGES}`, 2, { offset: 1, text: 'x' })).toEqual({ offset: 1, text: 'x' })
  })
})

describe('undelivered appends in the replaceable lane', () => {
  it('merge into one frame carrying all their text, at every aliased path; a frame nobody merged into is sent as serialized', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 3)
    scheduler.enqueueControl('busy')
    for (const p of appends(2, 3, ['de', 'fgh', '', 'i'])) sub.publish(p)
    s.drainAll()
    expect(events(s.written.slice(1))).toEqual([
      { __typename: 'MessageUpdated', message: { id: 'm1', version: 5 }, a: { o: 3, text: 'defghi' }, append: { offset: 3 } },
    ])
    // The socket is idle now: the next frame is written as it would have been serialized with its values.
    const next = sub.resolve(appends(6, 9, ['j'])[0]!)!
    sub.route(next)
    const plain = { __typename: 'MessageUpdated', message: { id: 'm1', version: 6 }, a: { o: 9, text: 'j' }, append: { offset: 9 } }
    expect(s.written.at(-1)).toBe(JSON.stringify({ id: 'op', type: 'next', payload: { data: { sessionEvents: plain } } }))
  })

  it('keep a status change (empty append) from costing the text queued before it', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    sub.chain.seed('m1', 1, 0)
    scheduler.enqueueControl('busy')
    for (const p of [...appends(2, 0, ['ab', 'c']), { version: 4, change: 'unchanged' as const }]) sub.publish(p)
    s.drainAll()
    expect(events(s.written.slice(1))).toMatchObject([{ message: { version: 4 }, a: { o: 0, text: 'abc' } }])
  })

  it('after a full-content frame (append null) that was never written, the merged frame has append null too', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const sub = subscription(scheduler)
    scheduler.enqueueControl('busy')
    // Nothing seeded: the first append has no base, so its frame is append null; the next replaces it.
    for (const p of appends(2, 3, ['de', 'f'])) sub.publish(p)
    s.drainAll()
    expect(events(s.written.slice(1))).toEqual([{ __typename: 'MessageUpdated', message: { id: 'm1', version: 3 }, a: null, append: null }])
  })

  it('after an eviction the next frame of that message has append null, even one executed before the eviction', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits({ replaceablePerSession: 1 }))
    const first = subscription(scheduler, 'm1')
    const other = subscription(scheduler, 'm2')
    first.chain.seed('m1', 1, 0)
    other.chain.seed('m2', 1, 0)
    scheduler.enqueueControl('busy')
    first.publish(appends(2, 0, ['lost'])[0]!)
    // m1's next frame is executing when m2's frame evicts m1's queued one (one key per session).
    const executing = first.resolve(appends(3, 4, ['after'])[0]!)
    other.publish(appends(2, 0, ['x'])[0]!)
    first.route(executing)
    s.drainAll()
    const written = events(s.written.slice(1))
    expect(written.find((e) => (e.message as { id: string }).id === 'm1')).toMatchObject({ message: { version: 3 }, a: null, append: null })
    // The evicted frame is the client's gap; from the null frame on, m1's appends chain again.
    expect(first.chain.advance('m1', 4, { offset: 9, text: '!' })).toEqual({ offset: 9, text: '!' })
  })

  it('an errored frame carries no append, and the next one follows a gap', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const chain = new AppendChain()
    chain.seed('m1', 1, 0)
    const append = chain.advance('m1', 2, { offset: 0, text: 'ab' }) as Append
    const errored = JSON.stringify({ id: 'op', type: 'next', payload: { data: null, errors: [{ message: 'Unexpected error.' }] } })
    scheduler.enqueueReplaceable(streamFrame(errored, streamTag('m1', 2, append, chain)), 's1', 'm1 op')
    expect(s.written).toEqual([errored])
    expect(chain.advance('m1', 3, { offset: 2, text: 'c' })).toBeNull()
  })

  it('of two subscriptions on one connection never merge into each other', () => {
    const s = heldSocket()
    const scheduler = new OutboundScheduler(s.socket, limits())
    const [a, b] = [subscription(scheduler), subscription(scheduler)]
    a.chain.seed('m1', 1, 0)
    b.chain.seed('m1', 1, 0)
    scheduler.enqueueControl('busy')
    const ra = a.resolve(appends(2, 0, ['ab'])[0]!)!
    const rb = b.resolve(appends(2, 0, ['ab'])[0]!)!
    scheduler.enqueueReplaceable(streamFrame(ra.frame, ra.tag), 's1', 'm1 op-a')
    scheduler.enqueueReplaceable(streamFrame(rb.frame, rb.tag), 's1', 'm1 op-b')
    s.drainAll()
    expect(events(s.written.slice(1)).map((e) => e.a)).toEqual([{ o: 0, text: 'ab' }, { o: 0, text: 'ab' }])
  })
})
