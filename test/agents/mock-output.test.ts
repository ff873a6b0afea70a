import { Writable } from 'node:stream'
import { ndJsonStream } from '@agentclientprotocol/sdk'
import { describe, expect, it } from 'vitest'
import { batchedOutput, chunkLines, notificationLine } from '../../src/agents/mock/batched-output.ts'

/** A pipe stand-in that records each write it gets (a system call each on a real pipe). */
function recordingPipe() {
  const writes: string[] = []
  const out = new Writable({
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString())
      done()
    },
  })
  return { out, writes }
}
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("the mock agent's output", () => {
  it('goes out once per turn of the event loop, in the order written, bytes and text alike', async () => {
    const { out, writes } = recordingPipe()
    const output = batchedOutput(out)
    output.write('a\n')
    output.write(new TextEncoder().encode('b\n'))
    output.write('c\n')
    expect(writes).toEqual([]) // held until the turn ends
    await turn()
    expect(writes).toEqual(['a\nb\nc\n'])
    output.write('d\n')
    await turn()
    expect(writes).toEqual(['a\nb\nc\n', 'd\n'])
  })

  it('sends a full batch at once and has its writer wait one turn; flush() sends what is held', async () => {
    const { out, writes } = recordingPipe()
    const output = batchedOutput(out, 10)
    expect(output.write('12345')).toBeUndefined()
    const full = output.write('67890')
    expect(writes).toEqual(['1234567890'])
    expect(full).toBeInstanceOf(Promise)
    await full
    output.write('x')
    output.flush()
    expect(writes).toEqual(['1234567890', 'x'])
  })

  it("writes the SDK's messages through its stream: the SDK's bytes, batched", async () => {
    const { out, writes } = recordingPipe()
    const output = batchedOutput(out)
    const { writable } = ndJsonStream(output.stream, new ReadableStream<Uint8Array>())
    const writer = writable.getWriter()
    await writer.write({ jsonrpc: '2.0', method: 'session/update', params: { n: 1 } })
    await writer.write({ jsonrpc: '2.0', id: 3, result: { stopReason: 'end_turn' } })
    await turn()
    expect(writes).toEqual([notificationLine('session/update', { n: 1 }) + '{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}\n'])
  })

  it("encodes a stream's chunk lines exactly as the SDK encodes the notification", async () => {
    const line = chunkLines('s-1', 'agent_thought_chunk', 'm-1')
    const captured: string[] = []
    const { writable } = ndJsonStream(
      new WritableStream<Uint8Array>({ write: (bytes) => void captured.push(new TextDecoder().decode(bytes)) }),
      new ReadableStream<Uint8Array>(),
    )
    const writer = writable.getWriter()
    for (const text of ['0;', '', 'quote " backslash \\ newline \n tab \t', '😀 é \u2028 \u0000', '""}}}}']) {
      await writer.write({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's-1', update: { sessionUpdate: 'agent_thought_chunk', messageId: 'm-1', content: { type: 'text', text } } } })
      expect(line(text)).toBe(captured.at(-1))
    }
  })
})
