import { Readable, Writable } from 'node:stream'
import { client, ndJsonStream, type SessionNotification } from '@agentclientprotocol/sdk'
import { describe, expect, it } from 'vitest'
import { ChunkMerger, chunkCount, MERGED_CHUNKS_META } from '../../src/agents/chunk-merge.ts'

const SESSION = 's-1'
const chunk = (text: string, extra: { kind?: string; messageId?: string | null; session?: string } = {}) =>
  JSON.stringify({
    jsonrpc: '2.0',
    method: 'session/update',
    params: {
      sessionId: extra.session ?? SESSION,
      update: {
        sessionUpdate: extra.kind ?? 'agent_message_chunk',
        ...(extra.messageId !== undefined ? { messageId: extra.messageId } : { messageId: 'm-1' }),
        content: { type: 'text', text },
      },
    },
  })
const lines = (...ls: string[]) => Buffer.from(ls.map((l) => l + '\n').join(''))
const outputLines = (bytes: Buffer) => bytes.toString('utf8').split('\n').slice(0, -1)
const parsed = (line: string) => JSON.parse(line) as { params: SessionNotification & { update: { content: { text: string }; _meta?: Record<string, unknown> } } }

describe('ChunkMerger', () => {
  it('joins a run of plain text chunks of one message into one notification carrying their count, text exact', () => {
    const texts = ['a', 'é"\\', '\n', '😀', 'z']
    const out = outputLines(new ChunkMerger().push(lines(...texts.map((t) => chunk(t)))))
    expect(out).toHaveLength(1)
    const { params } = parsed(out[0]!)
    expect(params.sessionId).toBe(SESSION)
    expect(params.update).toMatchObject({ sessionUpdate: 'agent_message_chunk', messageId: 'm-1', content: { type: 'text', text: texts.join('') } })
    expect(params.update._meta).toEqual({ [MERGED_CHUNKS_META]: texts.length })
    expect(chunkCount(params.update)).toBe(texts.length)
  })

  it('passes every other line through byte for byte, in order, and ends the run there', () => {
    const tool = JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: SESSION, update: { sessionUpdate: 'tool_call', toolCallId: 't', title: 'Read' } } })
    const request = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'session/request_permission', params: { sessionId: SESSION } })
    const withMeta = JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: SESSION, update: { sessionUpdate: 'agent_message_chunk', messageId: 'm-1', content: { type: 'text', text: 'x' }, _meta: { a: 1 } } } })
    const annotated = JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: SESSION, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x', annotations: null } } } })
    const input = [chunk('1'), chunk('2'), tool, chunk('3'), request, chunk(''), chunk('4'), withMeta, annotated, '{not json', '  ', chunk('5')]
    const out = outputLines(new ChunkMerger().push(lines(...input)))
    expect(out.map((l) => (l.startsWith('{"jsonrpc"') && parsed(l).params?.update?.sessionUpdate === 'agent_message_chunk' ? `chunk:${parsed(l).params.update.content.text}` : l))).toEqual([
      'chunk:12',
      tool,
      'chunk:3',
      request,
      'chunk:', // an empty chunk is not joined: the coalescer skips it
      'chunk:4',
      'chunk:x', // with _meta
      'chunk:x', // with annotations
      '{not json',
      '  ',
      'chunk:5',
    ])
    // A run of one is the agent's own line, unchanged.
    expect(out[2]).toBe(chunk('3'))
    expect(out[10]).toBe(chunk('5'))
    expect(out[6]).toBe(withMeta)
  })

  it('reads only the text of lines that continue a canonically encoded run, and nothing that merely starts like one', () => {
    const prefix = chunk('').slice(0, -'""}}}}'.length)
    const injected = `${prefix}"b","annotations":null}}}}`
    const number = `${prefix}7}}}}`
    const spaced = chunk('d').replace('{"jsonrpc"', '{ "jsonrpc"')
    const input = [chunk('a'), `${prefix}"\u0062"}}}}`, injected, chunk('c'), number, spaced, chunk('e'), `${prefix}""}}}}`, chunk('f')]
    const out = outputLines(new ChunkMerger().push(lines(...input)))
    expect(out.map((l) => ([injected, number].includes(l) ? l : parsed(l).params.update.content.text))).toEqual([
      'ab', // an escaped text is still the text
      injected, // a text followed by more fields is another shape: passed on, run ended
      'c',
      number,
      'de', // a run may start with a line in another spacing: joined, each line parsed whole
      '',
      'f',
    ])
  })

  it('never joins across messages, kinds or sessions', () => {
    const input = [
      chunk('a'),
      chunk('b', { messageId: 'm-2' }),
      chunk('c', { messageId: 'm-2', kind: 'agent_thought_chunk' }),
      chunk('d', { messageId: 'm-2', kind: 'agent_thought_chunk', session: 's-2' }),
      chunk('e', { messageId: null }),
      chunk('f', { messageId: null }),
    ]
    const out = outputLines(new ChunkMerger().push(lines(...input)))
    expect(out.map((l) => parsed(l).params.update.content.text)).toEqual(['a', 'b', 'c', 'd', 'ef'])
    expect(out.slice(0, 4)).toEqual(input.slice(0, 4))
  })

  it('holds a line split across reads until its end arrives, and passes a line longer than a read on as it comes', () => {
    const merger = new ChunkMerger()
    const bytes = lines(chunk('a'), chunk('b'), chunk('c'))
    const cut = bytes.length - 10
    const first = merger.push(bytes.subarray(0, cut))
    expect(outputLines(first).map((l) => parsed(l).params.update.content.text)).toEqual(['ab'])
    const second = merger.push(bytes.subarray(cut))
    expect(outputLines(second)).toEqual([chunk('c')])

    // A long line: held once, then passed through, and the line after it is handled again.
    const long = JSON.stringify({ jsonrpc: '2.0', method: 'x', params: { pad: 'p'.repeat(3000) } })
    const all = Buffer.concat([Buffer.from(long + '\n'), lines(chunk('d'), chunk('e'))])
    const parts = [all.subarray(0, 1000), all.subarray(1000, 2000), all.subarray(2000, 2500), all.subarray(2500)]
    const out = parts.map((p) => merger.push(p))
    expect(out[0]!.length).toBe(0)
    expect(out[1]!.equals(all.subarray(0, 2000))).toBe(true)
    expect(out[2]!.equals(parts[2]!)).toBe(true)
    const [longLine, joined, rest] = Buffer.concat(out).toString().split('\n')
    expect(longLine).toBe(long)
    expect(parsed(joined!).params.update.content.text).toBe('de')
    expect(rest).toBe('')
    expect(merger.end()).toBeUndefined()
  })

  it('a joined notification is one the ACP SDK validates and delivers, with the whole text', async () => {
    const received: SessionNotification[] = []
    const input = Readable.from([new ChunkMerger().push(lines(...Array.from({ length: 100 }, (_, i) => chunk(`${i};`))))])
    const sink = new Writable({ write: (_c, _e, done) => done() })
    const connection = client({ name: 'test' })
      .onNotification('session/update', ({ params }) => void received.push(params))
      .connect(ndJsonStream(Writable.toWeb(sink) as WritableStream<Uint8Array>, Readable.toWeb(input) as unknown as ReadableStream<Uint8Array>))
    await connection.closed
    expect(received).toHaveLength(1)
    const update = received[0]!.update
    expect(update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text' && update.content.text).toBe(Array.from({ length: 100 }, (_, i) => `${i};`).join(''))
    expect(chunkCount(update as { _meta?: Record<string, unknown> })).toBe(100)
  })
})

describe('chunkCount', () => {
  it('is 1 for an update the agent sent as is, whatever its _meta claims unless it is a count', () => {
    expect(chunkCount({})).toBe(1)
    expect(chunkCount({ _meta: null })).toBe(1)
    expect(chunkCount({ _meta: { [MERGED_CHUNKS_META]: 'many' } })).toBe(1)
    expect(chunkCount({ _meta: { [MERGED_CHUNKS_META]: -3 } })).toBe(1)
    expect(chunkCount({ _meta: { [MERGED_CHUNKS_META]: 2.5 } })).toBe(1)
    expect(chunkCount({ _meta: { [MERGED_CHUNKS_META]: 12 } })).toBe(12)
  })
})
