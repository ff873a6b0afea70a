import { randomUUID } from 'node:crypto'
import type { SessionNotification } from '@agentclientprotocol/sdk'
import type { Logger } from '../observability/logger.ts'
import { OwnershipLostError, type Store } from '../store/store.ts'
import { clearSessionError, setSessionPublications, updateSession, type SessionPublications } from '../store/sessions.ts'
import { findToolCallMessage, insertMessage, updateMessage, type NewMessage } from '../store/messages.ts'
import { appendMessageContent } from '../store/message-content.ts'
import type { Scheduler } from '../util/scheduler.ts'
import { errorFields } from '../observability/error-fields.ts'
import { tracing, type StageContext } from '../observability/tracing.ts'
import type { AgentInput } from './agent-process.ts'
import type { ClarifyResult } from './extensions.ts'
import { SessionCoalescer, type StreamAppend, type StreamKind } from './coalescer.ts'
import type { AgentMetrics } from './agent-metrics.ts'
import { chunkCount } from './chunk-merge.ts'
import type { SessionFence } from './session-fence.ts'
import { parseMetadata, storedToolCallDetail, toolCallDetail } from './tool-call-detail.ts'
import { boundedPlan, modelChoice, permissionOptions } from './agent-publications.ts'

const TOOL_STATUS: Record<string, string> = {
  pending: 'PENDING',
  in_progress: 'IN_PROGRESS',
  completed: 'COMPLETED',
  failed: 'FAILED',
}

type Responder =
  | { kind: 'PERMISSION_REQUEST'; respond: (optionId: string | null) => void }
  | { kind: 'CLARIFICATION'; respond: (answer: string | null) => void }

type PermissionInput = Extract<AgentInput, { type: 'permission' }>
type ClarifyInput = Extract<AgentInput, { type: 'clarify' }>
type SubagentInput = Extract<AgentInput, { type: 'subagent' }>

/** What the translation needs of its session's runtime: the turn in flight, and the fence every write passes. */
export interface SessionOutlet {
  readonly store: Store
  readonly logger: Logger
  readonly metrics: AgentMetrics
  readonly scheduler?: Scheduler
  readonly fence: SessionFence
  /** The turn in flight: the agent's messages belong to it. */
  currentTurn(): string | undefined
}

/**
 * Turns what the agent says (ACP session updates, permission and clarification requests, subagent
 * notices) into store writes and session events: streamed text through the coalescer, tool calls
 * and requests as messages of the turn in flight, models and subagents on the session.
 */
export class AcpUpdates {
  readonly coalescer: SessionCoalescer
  /** Open permission and clarification requests, by pendingId: the user's answer goes back to the agent. */
  readonly #responders = new Map<string, Responder>()
  readonly #subagents = new Set<string>()
  #agentSpokeThisTurn = false
  readonly #sessionId: string

  constructor(private readonly outlet: SessionOutlet) {
    this.#sessionId = outlet.fence.sessionId
    this.coalescer = new SessionCoalescer(
      {
        create: (kind, text, trace) => this.#createStreamMessage(kind, text, trace),
        update: (messageId, append, trace) => this.#appendStreamMessage(messageId, append, trace),
      },
      (error) => {
        if (error instanceof OwnershipLostError) return outlet.fence.ownershipLost()
        outlet.logger.error({ sessionId: this.#sessionId, action: 'coalescer.write', ...errorFields(error) }, 'stream write failed')
      },
      outlet.scheduler,
      undefined,
      this.#sessionId,
    )
  }

  /** A new turn went out: the agent's first update of it clears the session's previous error. */
  turnBegan(): void {
    this.#agentSpokeThisTurn = false
  }

  /** Hands the user's answer to the agent's open request; false when no such request is open. */
  respond(pendingId: string, answer: { optionId?: string; text?: string }): boolean {
    const responder = this.#responders.get(pendingId)
    if (!responder) return false
    this.#responders.delete(pendingId)
    if (responder.kind === 'PERMISSION_REQUEST') responder.respond(answer.optionId ?? null)
    else responder.respond(answer.text ?? null)
    return true
  }

  /** The session ends: every open request is cancelled towards the agent, and no subagent runs on. */
  cancelOpenRequests(): void {
    for (const responder of this.#responders.values()) responder.respond(null)
    this.#forget()
  }

  /** The session was taken over: the agent is stopped, so nobody is told anything. */
  abandon(): void {
    this.coalescer.discard()
    this.#forget()
  }

  #forget(): void {
    this.#responders.clear()
    this.#subagents.clear()
  }

  async update(notification: SessionNotification): Promise<void> {
    const { outlet } = this
    const update = notification.update
    if (!this.#agentSpokeThisTurn && outlet.currentTurn()) {
      // A newer agent response clears the session's previous recoverable error.
      this.#agentSpokeThisTurn = true
      await outlet.fence.write('session.error_cleared', () => clearSessionError(outlet.store, this.#sessionId))
    }
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
      case 'agent_thought_chunk': {
        const kind: StreamKind = update.sessionUpdate === 'agent_message_chunk' ? 'MESSAGE' : 'REASONING'
        if (update.content.type === 'text') {
          // A store slower than the agent holds the handoff here (and so the agent), not memory.
          await this.coalescer.room()
          const count = chunkCount(update)
          outlet.metrics.chunkReceived(kind, count)
          this.coalescer.chunk(kind, update.content.text, update.messageId ?? undefined, count)
        }
        return
      }
      case 'tool_call': {
        await this.coalescer.flush()
        await this.#agentMessage({
          kind: 'TOOL_CALL',
          content: update.title,
          status: TOOL_STATUS[update.status ?? 'pending'] ?? 'PENDING',
          toolCallId: update.toolCallId,
          metadata: JSON.stringify({ kind: update.kind ?? 'other', toolCall: toolCallDetail(update) }),
        })
        return
      }
      case 'tool_call_update': {
        await this.coalescer.flush()
        const existing = await findToolCallMessage(outlet.store, this.#sessionId, update.toolCallId)
        if (!existing) return
        outlet.fence.guard('tool call update')
        const metadata = parseMetadata(existing.metadata)
        const message = await updateMessage(outlet.store, existing.id, {
          ...(update.status && { status: TOOL_STATUS[update.status] ?? existing.status }),
          ...(update.title && { content: update.title }),
          metadata: JSON.stringify({
            ...metadata,
            ...(update.kind && { kind: update.kind }),
            toolCall: toolCallDetail(update, storedToolCallDetail(metadata)),
          }),
        })
        outlet.fence.publish({ type: 'MessageUpdated', sessionId: this.#sessionId, messageId: message.id, version: message.version })
        return
      }
      case 'config_option_update': {
        const models = modelChoice(update)
        if (models) await this.#published({ currentModelId: models.currentModelId, availableModels: models.availableModels }, 'SessionModelsUpdated')
        return
      }
      case 'current_mode_update':
        return this.#published({ currentModeId: update.currentModeId }, 'SessionStateChanged')
      case 'plan':
        return this.#published({ plan: boundedPlan(update.entries) }, 'SessionStateChanged')
      default:
        return
    }
  }

  /**
   * What the agent published about its session (models, mode, plan): recorded and told to the
   * session's followers; no task summary or activity time moves for it.
   */
  async #published(changes: SessionPublications, event: 'SessionModelsUpdated' | 'SessionStateChanged'): Promise<void> {
    const { outlet } = this
    await outlet.fence.write('session.published', () => setSessionPublications(outlet.store, this.#sessionId, changes))
    if (event === 'SessionModelsUpdated') outlet.fence.publish({ type: 'SessionModelsUpdated', sessionId: this.#sessionId })
    else outlet.fence.publish({ type: 'SessionStateChanged', sessionId: this.#sessionId })
  }

  async permission(input: PermissionInput): Promise<void> {
    await this.coalescer.flush()
    const { toolCall } = input.request
    const options = permissionOptions(input.request.options)
    // What the user is asked to allow: the tool call as the agent described it so far (its
    // tool_call), with what the request itself adds.
    const call = toolCall.toolCallId ? await findToolCallMessage(this.outlet.store, this.#sessionId, toolCall.toolCallId) : undefined
    const detail = toolCallDetail(toolCall, storedToolCallDetail(parseMetadata(call?.metadata)))
    const title = toolCall.title ?? call?.content ?? 'Permission'
    const pendingId = await this.#pendingRequest('PERMISSION_REQUEST', title, { options, toolCall: detail })
    this.#responders.set(pendingId, {
      kind: 'PERMISSION_REQUEST',
      respond: (optionId) => input.respond({ outcome: optionId ? { outcome: 'selected', optionId } : { outcome: 'cancelled' } }),
    })
  }

  async clarify(input: ClarifyInput): Promise<void> {
    await this.coalescer.flush()
    const pendingId = await this.#pendingRequest('CLARIFICATION', input.request.question, {})
    this.#responders.set(pendingId, {
      kind: 'CLARIFICATION',
      respond: (answer) => input.respond((answer === null ? { outcome: 'cancelled' } : { outcome: 'answered', answer }) satisfies ClarifyResult),
    })
  }

  async subagent(input: SubagentInput): Promise<void> {
    const { outlet } = this
    if (input.notification.state === 'started') this.#subagents.add(input.notification.subagentId)
    else this.#subagents.delete(input.notification.subagentId)
    const count = this.#subagents.size
    await outlet.fence.write('session.subagents', () => updateSession(outlet.store, this.#sessionId, { activeSubagentCount: count }))
  }

  /** Stores an agent message of the current turn and announces it. */
  async #agentMessage(fields: Pick<NewMessage, 'kind' | 'content' | 'status' | 'pendingId' | 'toolCallId' | 'metadata'>, trace?: StageContext) {
    const { outlet } = this
    outlet.fence.guard('message')
    const insert = (publishTrace?: StageContext) =>
      insertMessage(outlet.store, { id: randomUUID(), sessionId: this.#sessionId, turnId: outlet.currentTurn(), author: 'AGENT', ...fields }).then((message) => {
        outlet.fence.publish({ type: 'MessageAdded', sessionId: this.#sessionId, messageId: message.id }, publishTrace)
        return message
      })
    return trace && tracing.on ? tracing.stages.storeWrite(trace, 'insert', insert) : insert()
  }

  async #pendingRequest(kind: Responder['kind'], content: string, metadata: object): Promise<string> {
    const pendingId = randomUUID()
    await this.#agentMessage({ kind, content, status: 'PENDING', pendingId, metadata: JSON.stringify(metadata) })
    return pendingId
  }

  async #createStreamMessage(kind: StreamKind, text: string, trace?: StageContext): Promise<string> {
    return (await this.#agentMessage({ kind, content: text, status: 'IN_PROGRESS' }, trace)).id
  }

  /** Only the window's text crosses the store and the pub/sub: subscribers that follow appends never reread the content. */
  async #appendStreamMessage(messageId: string, append: StreamAppend, trace?: StageContext): Promise<void> {
    const { outlet } = this
    outlet.fence.guard('stream append')
    const write = async (publishTrace?: StageContext) => {
      const result = await appendMessageContent(outlet.store, messageId, append.text)
      if (!result) return // deleted with its session meanwhile: nobody to tell
      outlet.metrics.published()
      outlet.fence.publish({ type: 'MessageUpdated', sessionId: this.#sessionId, messageId, version: result.version, append }, publishTrace)
    }
    return trace && tracing.on ? tracing.stages.storeWrite(trace, 'update', write) : write()
  }
}
