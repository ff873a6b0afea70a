import { builder } from '../builder.ts'
import { requireReadableSession } from '../authorize.ts'
import { intInRange } from '../validate.ts'
import { badInput } from '../../errors.ts'
import { findMessageOfSession, messagesOfSession } from '../../store/sessions.ts'
import type { SessionRow, TurnRow } from '../../store/rows.ts'
import { SESSION_STATES, type SessionState } from '../../summary/types.ts'
import { contentOf, type MessageValue } from '../message-content.ts'
import { streamBeingRendered } from '../../session-stream/session-stream.ts'
import { TaskRef } from './task.ts'
import { RepositoryGitStatusRef } from './git.ts'

export const SessionStateEnum = builder.enumType('SessionState', { values: SESSION_STATES })
const MessageAuthorEnum = builder.enumType('MessageAuthor', { values: ['USER', 'AGENT', 'SYSTEM'] as const })
const MessageKindEnum = builder.enumType('MessageKind', {
  values: ['MESSAGE', 'REASONING', 'TOOL_CALL', 'PERMISSION_REQUEST', 'CLARIFICATION', 'ERROR', 'STATUS'] as const,
})

interface ModelOption {
  id: string
  name: string
}

/** availableModels is JSON written by the agent layer; anything malformed reads as "none published". */
function parseModels(json: string): ModelOption[] {
  try {
    const value = JSON.parse(json) as unknown
    if (!Array.isArray(value)) return []
    return value.filter(
      (m): m is ModelOption => typeof m?.id === 'string' && typeof m?.name === 'string',
    )
  } catch {
    return []
  }
}

const ModelOptionRef = builder.objectRef<ModelOption>('ModelOption').implement({
  fields: (t) => ({ id: t.exposeID('id'), name: t.exposeString('name') }),
})

export const SessionModelsRef = builder
  .objectRef<{ currentModelId: string | null; available: ModelOption[] }>('SessionModels')
  .implement({
    fields: (t) => ({
      currentModelId: t.exposeString('currentModelId', { nullable: true }),
      available: t.expose('available', { type: [ModelOptionRef] }),
    }),
  })

export const sessionModels = (s: SessionRow) => ({
  currentModelId: s.currentModelId,
  available: parseModels(s.availableModels),
})

const SessionErrorRef = builder
  .objectRef<{ stamp: string; code: string; message: string; occurredAt: Date }>('SessionError')
  .implement({
    fields: (t) => ({
      stamp: t.exposeString('stamp'),
      code: t.exposeString('code'),
      message: t.exposeString('message'),
      occurredAt: t.expose('occurredAt', { type: 'DateTime' }),
    }),
  })

export const TurnRef = builder.objectRef<TurnRow>('Turn').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    sessionId: t.exposeID('sessionId'),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true }),
    lifecycleOnly: t.exposeBoolean('lifecycleOnly', {
      description: 'Synthetic turns (such as an agent resume) that are not conversational.',
    }),
    stopReason: t.exposeString('stopReason', {
      nullable: true,
      description:
        "Why the turn ended, once it has: the agent's stop reason (end_turn, max_tokens, max_turn_requests, refusal, cancelled, or error for an error answer), or the server's when it cut the turn off: interrupted (the server process running it died; closed at the restart or takeover), crashed (the agent process exited), or the failure code of the session.",
    }),
    interrupted: t.exposeBoolean('interrupted', {
      description:
        "True when the turn was cut off before the agent finished it (server process died, agent crashed, session stopped or failed mid-turn); its unfinished messages then end INTERRUPTED and its unanswered requests CANCELLED.",
    }),
  }),
})

export const MessageRef = builder.objectRef<MessageValue>('Message').implement({
  fields: (t) => ({
    id: t.id({
      description: 'For user messages this is the client-generated clientMessageId.',
      // The row's own id is the server's; a client reconciles its prompts by the id it sent.
      resolve: (m) => m.clientMessageId ?? m.id,
    }),
    sessionId: t.exposeID('sessionId'),
    taskId: t.exposeID('taskId'),
    turnId: t.exposeID('turnId', { nullable: true }),
    author: t.field({ type: MessageAuthorEnum, resolve: (m) => m.author as (typeof MessageAuthorEnum)['$inferType'] }),
    kind: t.field({ type: MessageKindEnum, resolve: (m) => m.kind as (typeof MessageKindEnum)['$inferType'] }),
    content: t.string({
      resolve: (m, _args, ctx, info) => {
        // A streamed update that carries the whole content is never sliced (outbound/append-frame.ts).
        const stream = streamBeingRendered(info)
        if (stream) stream.withContent = true
        return contentOf(ctx.store, m)
      },
    }),
    status: t.exposeString('status', {
      nullable: true,
      description:
        'Kind-specific: PENDING, IN_PROGRESS, COMPLETED, FAILED, APPROVED, REJECTED, ANSWERED, CANCELLED, INTERRUPTED. Once its turn has ended no message is IN_PROGRESS: a streamed message or tool call ends COMPLETED, or INTERRUPTED when the turn was cut off.',
    }),
    pendingId: t.exposeID('pendingId', {
      nullable: true,
      description: 'Set on PERMISSION_REQUEST and CLARIFICATION messages.',
    }),
    version: t.exposeInt('version', {
      description: 'Increases with every persisted change of this message; clients keep the highest.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
})

export const SessionRef = builder.objectRef<SessionRow>('Session').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    taskId: t.exposeID('taskId'),
    agentProfile: t.exposeString('agentProfile'),
    state: t.field({ type: SessionStateEnum, resolve: (s) => s.state as SessionState }),
    isPrimary: t.exposeBoolean('isPrimary'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
    models: t.field({
      type: SessionModelsRef,
      description: 'Model configuration the agent published (empty when it published none).',
      resolve: sessionModels,
    }),
    messages: t.field({
      type: [MessageRef],
      description: 'The newest messages, oldest first.',
      args: { last: t.arg.int({ defaultValue: 100 }), before: t.arg.string() },
      resolve: async (s, args, ctx) => {
        const last = intInRange('last', args.last ?? 100, 0, 1000)
        // Paging back through one session is rare and anchored: only the newest page is batched.
        if (!args.before) return ctx.loaders.latestMessagesOfSession(last).load(s.id)
        const messages = await messagesOfSession(ctx.store, s.id, last, args.before)
        if (!messages) throw badInput('before is not a message of this session.', 'before')
        return messages
      },
    }),
    message: t.field({
      type: MessageRef,
      nullable: true,
      description:
        "One message of this session, whole, by its Message.id: what a client reads when a MessageUpdated's append is null or does not continue its copy, instead of the session's newest messages. Null when the session has no message of that id (deleted, or of another session).",
      args: { id: t.arg.id({ required: true }) },
      resolve: async (s, { id }, ctx) => {
        const task = await ctx.loaders.task.load(s.taskId)
        return task ? findMessageOfSession(ctx.store, { id: s.id, workspaceId: task.workspaceId }, String(id)) : null
      },
    }),
    turns: t.field({
      type: [TurnRef],
      args: { last: t.arg.int({ defaultValue: 20 }) },
      resolve: (s, args, ctx) => ctx.loaders.latestTurnsOfSession(intInRange('last', args.last ?? 20, 0, 1000)).load(s.id),
    }),
    git: t.field({
      type: [RepositoryGitStatusRef],
      description: 'Latest per-repository Git observation of this session.',
      resolve: (s, _args, ctx) => ctx.loaders.gitOfSession.load(s.id),
    }),
    error: t.field({
      type: SessionErrorRef,
      nullable: true,
      description: "The session's current recoverable error, if any.",
      resolve: (s) =>
        s.errorStamp && s.errorCode && s.errorOccurredAt
          ? { stamp: s.errorStamp, code: s.errorCode, message: s.errorMessage ?? '', occurredAt: s.errorOccurredAt }
          : null,
    }),
  }),
})

builder.objectField(TaskRef, 'sessions', (t) =>
  t.field({
    type: [SessionRef],
    description: 'All sessions of the task (detail surfaces only; task rows use statusSummary).',
    resolve: (task, _args, ctx) => ctx.loaders.sessionsOfTask.load(task.id),
  }),
)

builder.queryField('session', (t) =>
  t.field({
    type: SessionRef,
    nullable: true,
    description: 'Session detail. Only detail surfaces load this.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => requireReadableSession(ctx, id),
  }),
)
