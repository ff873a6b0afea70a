// The built-in `mock` agent: a real separate process speaking ACP over stdio through the SDK.
// It runs the scripts of ../shared/contract/MAPPING.md ("The built-in mock agent"): a plain
// prompt gets a short streamed echo; the prompt `count` answers how many prompts it received.
// A script may also wait for its prompt in a file (script-drop.ts): the demo's prompts stay words.
import { randomUUID } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import { agent, ndJsonStream, PROTOCOL_VERSION, RequestError, type AgentContext, type PermissionOption, type RequestPermissionResponse, type SessionNotification } from '@agentclientprotocol/sdk'
import {
  CLARIFY_METHOD,
  SUBAGENT_METHOD,
  type ClarifyParams,
  type ClarifyResult,
  type SessionErrorData,
  type SubagentParams,
} from '../extensions.ts'
import { batchedOutput, chunkLines } from './batched-output.ts'
import { takeScript } from './script-drop.ts'
import { history, remember, replayAfterAnswer } from './session-history.ts'

/** `ms`: a pause between two chunks of a say / think (text arriving as it is written), or while a tool call runs. */
type Step =
  | { say: string; chunks?: number; ms?: number }
  | { think: string; chunks?: number; ms?: number }
  | { stream: { kind: 'reasoning' | 'message'; count: number } }
  /** `detail` / `updateDetail`: extra ACP fields (content with diffs, locations, rawInput) of the tool_call and of its final tool_call_update. */
  | { tool: { title: string; kind?: string; status?: 'completed' | 'failed'; ms?: number; detail?: Record<string, unknown>; updateDetail?: Record<string, unknown> } }
  /** `options` and `toolCall` (extra ACP tool call fields: kind, content, locations, rawInput) as a real agent sends them; default options allow / reject. */
  /** `echo`: the agent then says which outcome it received (`permission outcome: <optionId | cancelled>`). */
  | { permission: { title: string; wait?: boolean; options?: PermissionOption[]; toolCall?: Record<string, unknown>; echo?: boolean } }
  | { clarify: { question: string; wait?: boolean } }
  /** With `ms` it finishes on its own; with `id` it runs until a later `finishSubagent` step names it. */
  | { subagent: { title: string; ms?: number; id?: string } }
  | { finishSubagent: string }
  | { models: { current: string; available: string[] } }
  | { write: { path: string; content: string } }
  /** ACP `plan` (the whole plan) and `current_mode_update`, as real agents publish them. */
  | { plan: { content: string; priority: 'high' | 'medium' | 'low'; status: 'pending' | 'in_progress' | 'completed' }[] }
  | { mode: string }
  | { sleep: number }
  | { error: { code: string; message: string } }
  /** A JSON-RPC error as real agents answer a prompt the model provider refused (no data.code of this product). */
  | { rpcError: { code: number; message: string; data?: unknown } }
  | { crash: number }

let promptsReceived = 0
/** Subagents that end when a later step says so: a test drives their end, not a timer. */
const openSubagents = new Map<string, () => Promise<void>>()
const cancelled = new Set<string>()

function split(text: string, parts: number): string[] {
  const n = Math.max(1, Math.min(parts, text.length || 1))
  const size = Math.ceil(text.length / n)
  const out: string[] = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

function promptText(prompt: { type: string; text?: string }[]): string {
  return prompt
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('')
}

function parseScript(text: string): Step[] | undefined {
  try {
    const value = JSON.parse(text) as { script?: unknown }
    return Array.isArray(value?.script) ? (value.script as Step[]) : undefined
  } catch {
    return undefined
  }
}

/** Sends a session update and remembers it, for a later session/load to replay. */
function update(client: AgentContext, notification: SessionNotification): Promise<void> {
  remember(notification)
  return client.notify('session/update', notification)
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function chunks(client: AgentContext, sessionId: string, kind: 'agent_message_chunk' | 'agent_thought_chunk', parts: string[], ms = 0) {
  const messageId = randomUUID()
  for (const [i, text] of parts.entries()) {
    if (ms > 0 && i > 0) {
      await pause(ms)
      if (cancelled.has(sessionId)) return
    }
    await update(client, {
      sessionId,
      update: { sessionUpdate: kind, messageId, content: { type: 'text', text } },
    })
  }
}

async function runStep(client: AgentContext, sessionId: string, step: Step, waits: Promise<unknown>[]) {
  if ('say' in step) return chunks(client, sessionId, 'agent_message_chunk', split(step.say, step.chunks ?? 1), step.ms)
  if ('think' in step) return chunks(client, sessionId, 'agent_thought_chunk', split(step.think, step.chunks ?? 1), step.ms)
  if ('stream' in step) {
    const kind = step.stream.kind === 'message' ? 'agent_message_chunk' : 'agent_thought_chunk'
    const messageId = randomUUID()
    // The load generator of the stream tests and benchmarks: each notification is the line the SDK
    // would write for it (encoded alike, see chunkLines), queued behind everything the SDK wrote
    // before (every earlier step awaited its sends) without the SDK's per-message promise chain,
    // which would make this agent, not the server reading it, the limit of a fast stream.
    const line = chunkLines(sessionId, kind, messageId)
    for (let i = 0; i < step.stream.count; i++) {
      if (cancelled.has(sessionId)) return
      const full = output.write(line(`${i};`))
      if (full) await full
    }
    return
  }
  if ('tool' in step) {
    const toolCallId = randomUUID()
    await update(client, {
      sessionId,
      update: { ...step.tool.detail, sessionUpdate: 'tool_call', toolCallId, title: step.tool.title, kind: (step.tool.kind ?? 'other') as 'other', status: 'in_progress' },
    })
    if (step.tool.ms) await pause(step.tool.ms)
    await update(client, {
      sessionId,
      update: { ...step.tool.updateDetail, sessionUpdate: 'tool_call_update', toolCallId, status: step.tool.status ?? 'completed' },
    })
    return
  }
  if ('permission' in step) {
    const answered = client.request('session/request_permission', {
      sessionId,
      toolCall: { ...step.permission.toolCall, toolCallId: randomUUID(), title: step.permission.title },
      options: step.permission.options ?? [
        { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
        { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
      ],
    })
    const echoed = step.permission.echo
      ? answered.then((response) => {
          const outcome = (response as RequestPermissionResponse).outcome
          const said = outcome.outcome === 'selected' ? outcome.optionId : 'cancelled'
          return chunks(client, sessionId, 'agent_message_chunk', [`permission outcome: ${said}`])
        })
      : answered
    if (step.permission.wait === false) waits.push(echoed)
    else await echoed
    return
  }
  if ('clarify' in step) {
    const answered = client.request<ClarifyResult, ClarifyParams>(CLARIFY_METHOD, { sessionId, question: step.clarify.question })
    if (step.clarify.wait === false) waits.push(answered)
    else await answered
    return
  }
  if ('subagent' in step) {
    const subagentId = randomUUID()
    const notify = (state: SubagentParams['state']) =>
      client.notify<SubagentParams>(SUBAGENT_METHOD, { sessionId, subagentId, title: step.subagent.title, state })
    await notify('started')
    if (step.subagent.id !== undefined) openSubagents.set(step.subagent.id, () => notify('finished'))
    // The subagent runs on in the background; the turn does not wait for it.
    else setTimeout(() => void notify('finished').catch(() => undefined), step.subagent.ms ?? 0)
    return
  }
  if ('finishSubagent' in step) {
    const finish = openSubagents.get(step.finishSubagent)
    openSubagents.delete(step.finishSubagent)
    return finish?.()
  }
  if ('models' in step)
    return update(client, {
      sessionId,
      update: {
        sessionUpdate: 'config_option_update',
        configOptions: [
          {
            id: 'model',
            name: 'Model',
            category: 'model',
            type: 'select',
            currentValue: step.models.current,
            options: step.models.available.map((value) => ({ value, name: value.toUpperCase() })),
          },
        ],
      },
    })
  if ('write' in step) {
    const file = path.resolve(process.cwd(), step.write.path)
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, step.write.content)
    return
  }
  if ('sleep' in step) return pause(step.sleep)
  if ('plan' in step) return update(client, { sessionId, update: { sessionUpdate: 'plan', entries: step.plan } })
  if ('mode' in step) return update(client, { sessionId, update: { sessionUpdate: 'current_mode_update', currentModeId: step.mode } })
  if ('error' in step) throw new RequestError(-32000, step.error.message, { code: step.error.code } satisfies SessionErrorData)
  if ('rpcError' in step) throw new RequestError(step.rpcError.code, step.rpcError.message, step.rpcError.data)
  if ('crash' in step) {
    // What the agent wrote before crashing reaches the server, as it would from an unbuffered agent.
    output.flush()
    process.exit(step.crash)
  }
}

/**
 * MOCK_AGENT_AUTH_ENV names a variable the mock signs in with, as Codex does with OPENAI_API_KEY:
 * it offers an `env_var` auth method and refuses session/new until the client authenticated with it.
 */
const authVariable = process.env.MOCK_AGENT_AUTH_ENV
let authenticated = !authVariable

const app = agent({ name: 'tss-mock-agent' })
  .onRequest('initialize', () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: true },
    agentInfo: { name: 'tss-mock-agent', version: '1.0.0' },
    authMethods: authVariable ? [{ type: 'env_var', id: 'mock-api-key', name: 'API key', vars: [{ name: authVariable }] }] : [],
  }))
  .onRequest('authenticate', ({ params }) => {
    if (params.methodId !== 'mock-api-key' || !authVariable || !process.env[authVariable]) throw RequestError.invalidParams(undefined, 'unknown auth method or no key')
    authenticated = true
    return {}
  })
  .onRequest('session/new', () => {
    if (!authenticated) throw RequestError.authRequired()
    return { sessionId: randomUUID() }
  })
  .onRequest('session/load', async ({ params, client }) => {
    const replay = async () => {
      for (const notification of history(params.sessionId)) await client.notify('session/update', notification)
    }
    if (!replayAfterAnswer()) await replay()
    else setImmediate(() => void replay().catch(() => undefined))
    return {}
  })
  .onNotification('session/cancel', ({ params }) => {
    cancelled.add(params.sessionId)
  })
  .onRequest('session/prompt', async ({ params, client }) => {
    promptsReceived++
    cancelled.delete(params.sessionId)
    const text = promptText(params.prompt as { type: string; text?: string }[])
    remember({ sessionId: params.sessionId, update: { sessionUpdate: 'user_message_chunk', content: { type: 'text', text } } })
    const script = (takeScript(process.env, text) as Step[] | undefined) ?? parseScript(text)
    if (!script) {
      const reply = text.trim() === 'count' ? `prompts received: ${promptsReceived}` : `echo: ${text}`
      await chunks(client, params.sessionId, 'agent_message_chunk', split(reply, 3))
      return { stopReason: 'end_turn' }
    }
    const waits: Promise<unknown>[] = []
    for (const step of script) {
      if (cancelled.has(params.sessionId)) return { stopReason: 'cancelled' }
      await runStep(client, params.sessionId, step, waits)
    }
    // Requests sent with "wait": false keep the turn open until they are answered.
    await Promise.all(waits)
    return { stopReason: cancelled.has(params.sessionId) ? 'cancelled' : 'end_turn' }
  })

const output = batchedOutput(process.stdout)
const connection = app.connect(ndJsonStream(output.stream, Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>))
void connection.closed.then(() => process.exit(0))
