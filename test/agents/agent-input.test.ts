import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { HANDOFF_CAPACITY, type AgentInput } from '../../src/agents/agent-process.ts'
import { throttledInput } from '../../src/agents/throttled-input.ts'
import { BoundedHandoff } from '../../src/agents/bounded-handoff.ts'

describe("an agent's stdout as the SDK reads it", () => {
  it('reads on past reads that end no line, so a line written in pieces arrives whole', async () => {
    const stdout = new PassThrough()
    const reader = throttledInput(stdout, new BoundedHandoff<AgentInput>(HANDOFF_CAPACITY)).getReader()
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { pad: 'x'.repeat(100) } })
    const read = reader.read()
    // Separate reads: the first holds no newline, the second does not end the line either.
    stdout.write(line.slice(0, 40))
    await new Promise((r) => setImmediate(r))
    stdout.write(line.slice(40, 80))
    await new Promise((r) => setImmediate(r))
    stdout.write(line.slice(80) + '\n')
    stdout.end()
    let text = new TextDecoder().decode((await read).value)
    for (let next = await reader.read(); !next.done; next = await reader.read()) text += new TextDecoder().decode(next.value)
    expect(text).toBe(line + '\n')
  })
})
