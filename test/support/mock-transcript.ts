// The built-in mock agent is deterministic (src/agents/mock/mock-agent.ts, MAPPING.md "The
// built-in mock agent"): what it emits for a script is known without running it, so a test can
// tell whether a stored transcript is exactly what the agent said, cut off at some point.

export type MockTextStep =
  | { say: string; chunks?: number }
  | { think: string; chunks?: number }
  | { stream: { kind: 'reasoning' | 'message'; count: number } }
  /** Emits nothing; apart in time, adjacent messages are ordered by their creation time alone. */
  | { sleep: number }

export interface AgentText {
  kind: 'MESSAGE' | 'REASONING'
  content: string
}

/** The agent's text messages for a script of text steps, in order: one message per step (each its own message id). */
export function mockAgentText(script: readonly MockTextStep[]): AgentText[] {
  return script.flatMap((step): AgentText[] => {
    if ('sleep' in step) return []
    if ('say' in step) return [{ kind: 'MESSAGE', content: step.say }]
    if ('think' in step) return [{ kind: 'REASONING', content: step.think }]
    let content = ''
    for (let i = 0; i < step.stream.count; i++) content += `${i};`
    return [{ kind: step.stream.kind === 'message' ? 'MESSAGE' : 'REASONING', content }]
  })
}

/**
 * Why `stored` is not an exact prefix of `expected` (undefined when it is): every stored message
 * but the last equals its expected one, the last is a prefix of its expected one, nothing extra.
 * Describes the first difference by position and length only (transcripts can be megabytes).
 */
export function prefixMismatch(stored: readonly AgentText[], expected: readonly AgentText[]): string | undefined {
  if (stored.length > expected.length) return `${stored.length} messages stored, the script emits ${expected.length}`
  for (const [i, message] of stored.entries()) {
    const want = expected[i]!
    if (message.kind !== want.kind) return `message ${i} is ${message.kind}, the script emits ${want.kind}`
    const last = i === stored.length - 1
    if (last ? !want.content.startsWith(message.content) : message.content !== want.content) {
      let at = 0
      while (at < message.content.length && message.content[at] === want.content[at]) at++
      return `message ${i} (${message.content.length} chars stored, ${want.content.length} emitted) differs at char ${at}`
    }
  }
  return undefined
}
