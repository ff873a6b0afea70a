// The ACP agent of `bench:append` (an AGENT_PROFILES entry the bench configures): a real separate
// process like the built-in mock, but it streams the mock's `{"stream":{"count":N}}` content
// ("0;1;2;…") in chunks of `group` items at a steady pace, so a 10 MB message takes `seconds`
// instead of the minutes 1.4 million one-item notifications take. The pace is the load shape
// (about 10 windows of the server's coalescer per second of stream), not a timing assumption.
import { randomUUID } from 'node:crypto'
import { Readable, Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { agent, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk'

export interface StreamPrompt {
  count: number
  group: number
  seconds: number
}

const cancelled = new Set<string>()

const app = agent({ name: 'tss-bench-stream-agent' })
  .onRequest('initialize', () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: true },
    agentInfo: { name: 'tss-bench-stream-agent', version: '1.0.0' },
  }))
  .onRequest('session/new', () => ({ sessionId: randomUUID() }))
  .onRequest('session/load', () => undefined)
  .onNotification('session/cancel', ({ params }) => {
    cancelled.add(params.sessionId)
  })
  .onRequest('session/prompt', async ({ params, client }) => {
    const { sessionId } = params
    cancelled.delete(sessionId)
    const text = (params.prompt as { type: string; text?: string }[]).map((b) => b.text ?? '').join('')
    const { count, group, seconds } = JSON.parse(text) as StreamPrompt
    const messageId = randomUUID()
    const chunks = Math.ceil(count / group)
    const started = performance.now()
    for (let c = 0; c < chunks; c++) {
      if (cancelled.has(sessionId)) return { stopReason: 'cancelled' }
      let chunk = ''
      for (let i = c * group; i < Math.min(count, (c + 1) * group); i++) chunk += `${i};`
      await client.notify('session/update', { sessionId, update: { sessionUpdate: 'agent_message_chunk', messageId, content: { type: 'text', text: chunk } } })
      const due = ((c + 1) / chunks) * seconds * 1000 - (performance.now() - started)
      if (due > 1) await sleep(due)
    }
    return { stopReason: 'end_turn' }
  })

const connection = app.connect(
  ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
  ),
)
void connection.closed.then(() => process.exit(0))
