import { describe, expect, it } from 'vitest'
import { AppendChain, streamFrame, streamTag, type Append } from '../../src/outbound/append-frame.ts'

/** A frame as graphql-ws serializes it, the leaves rendered by the tag (markers), at `a: append { o: offset text }` and `append { text }`. */
function render(append: Append, { content }: { content?: string } = {}) {
  const chain = new AppendChain()
  chain.seed('m1', 1, append.offset)
  const advanced = chain.advance('m1', 2, append) as Append
  const tag = streamTag('m1', 2, advanced, chain)
  tag.templated = true
  tag.appendPaths.push(['sessionEvents', 'a'], ['sessionEvents', 'append'])
  const message = { id: 'm1', version: 2, ...(content !== undefined && { content }) }
  const event = { __typename: 'MessageUpdated', message, a: { o: tag.offset(advanced), text: tag.text(advanced) }, append: { text: tag.text(advanced) } }
  const frame = JSON.stringify({ id: 'op', type: 'next', payload: { data: { sessionEvents: event } } })
  const plain = JSON.stringify({ id: 'op', type: 'next', payload: { data: { sessionEvents: { ...event, a: { o: append.offset, text: append.text }, append: { text: append.text } } } } })
  return { frame, tag, plain }
}

describe('append frames spliced from a template (no parse per slice)', () => {
  it.each([
    ['quotes and backslashes', 'say "hi" \\ back\\slash \\"'],
    ['control characters', 'tab\there\nnew\u0001\u001f'],
    ['unicode and surrogate pairs', 'é€ 😀 𝄞 日本'],
    ['line and paragraph separators', 'a\u2028b\u2029c'],
    ['a lone surrogate', 'x\ud800y\udc00'],
    ['text that looks like JSON', '{"offset":-1,"text":"\\u0000"}'],
  ])('%s: the frame is byte for byte what JSON.stringify would write', (_name, text) => {
    const { frame, tag, plain } = render({ offset: 7, text })
    expect(streamFrame(frame, tag).take().frame).toBe(plain)
  })

  it('an errored frame has every append null', () => {
    const { frame, tag } = render({ offset: 0, text: 'ab' })
    const errored = frame.replace('"payload":{', '"payload":{"errors":[{"message":"boom"}],')
    const written = JSON.parse(streamFrame(errored, tag).take().frame as string) as { payload: { data: { sessionEvents: Record<string, unknown> } } }
    expect(written.payload.data.sessionEvents).toMatchObject({ a: null, append: null })
  })

  it('a content that happens to hold a marker falls back to parsing, and the values are still right', () => {
    const first = render({ offset: 0, text: 'ab' })
    // The marker as the frame carries it, inside the message's content: more markers than leaves.
    const marker = JSON.parse(first.frame.slice(first.frame.indexOf('"text":"') + 7, first.frame.indexOf('"},"append"') + 1)) as string
    const { frame, tag, plain } = render({ offset: 3, text: 'cd' }, { content: `abc${marker}` })
    tag.withContent = true
    expect(streamFrame(frame, tag).take().frame).toBe(plain)
  })

  it('a frame not delivered through the scheduler renders the values themselves', () => {
    const tag = streamTag('m1', 2, { offset: 1, text: 'x' }, new AppendChain())
    expect([tag.offset({ offset: 1, text: 'x' }), tag.text({ offset: 1, text: 'x' })]).toEqual([1, 'x'])
  })
})
