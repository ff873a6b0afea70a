// The session commands of the API: thin resolvers that validate their arguments, check access,
// and hand the command to SessionCommands (ctx.sessions), which routes it to the session's owner.
import { builder } from '../builder.ts'
import { requireReadableSession, requireReadableTask } from '../authorize.ts'
import { badInput, notFound } from '../../errors.ts'
import { sessionOperation } from '../session-operation.ts'
import type { MessageRow } from '../../store/rows.ts'
import type { Context } from '../context.ts'
import { MessageRef, SessionRef } from './session.ts'

const StartSessionInput = builder.inputType('StartSessionInput', {
  fields: (t) => ({
    taskId: t.id({ required: true }),
    agentProfile: t.string({
      defaultValue: 'mock',
      description: 'Agent profile name from the server\'s configuration; the built-in profile is "mock".',
    }),
    prompt: t.string({ description: 'Optional first prompt, sent like addMessage.' }),
    clientMessageId: t.id(),
  }),
})

const AddMessageInput = builder.inputType('AddMessageInput', {
  fields: (t) => ({
    taskId: t.id({ required: true }),
    sessionId: t.id({ required: true }),
    clientMessageId: t.id({
      required: true,
      description: 'Stable client-generated id, 1 to 128 characters of [A-Za-z0-9_-:.].',
    }),
    content: t.string({ required: true }),
  }),
})

const AddMessagePayloadRef = builder.objectRef<{ message: MessageRow; replayed: boolean }>('AddMessagePayload').implement({
  fields: (t) => ({
    message: t.field({ type: MessageRef, resolve: (p) => p.message }),
    replayed: t.exposeBoolean('replayed', {
      description: 'True when this request was a retry of an already accepted clientMessageId.',
    }),
  }),
})

const FocusAckRef = builder.objectRef<{ sessionId: string; focused: boolean }>('FocusAck').implement({
  fields: (t) => ({ sessionId: t.exposeID('sessionId'), focused: t.exposeBoolean('focused') }),
})

const CLIENT_MESSAGE_ID = /^[A-Za-z0-9_:.-]{1,128}$/
const MAX_CONTENT_BYTES = 256 * 1024

function validatePrompt(field: string, content: string): string {
  if (content.trim().length === 0) throw badInput(`${field} must not be empty.`, field)
  if (Buffer.byteLength(content, 'utf8') > MAX_CONTENT_BYTES) throw badInput(`${field} must be at most 256 KiB.`, field)
  return content
}

function validateClientMessageId(id: string): string {
  if (!CLIENT_MESSAGE_ID.test(id))
    throw badInput('clientMessageId must be 1 to 128 characters of [A-Za-z0-9_-:.].', 'clientMessageId')
  return id
}

/** A session the caller may act on, or NOT_FOUND / FORBIDDEN. */
async function requireSession(ctx: Context, sessionId: string) {
  const session = await requireReadableSession(ctx, sessionId)
  if (!session) throw notFound('Session', sessionId)
  return session
}

builder.mutationFields((t) => ({
  startSession: t.field({
    type: SessionRef,
    description:
      'Launches an agent (an ACP agent process of the named profile) for the task. If the launch stops before a session exists, the task keeps a launch error and the mutation returns that error.',
    args: { input: t.arg({ type: StartSessionInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const prompt = input.prompt == null ? null : validatePrompt('prompt', input.prompt)
      const clientMessageId = input.clientMessageId == null ? null : validateClientMessageId(input.clientMessageId)
      await requireReadableTask(ctx, input.taskId)
      return sessionOperation(() =>
        ctx.sessions.startSession({ taskId: input.taskId, agentProfile: input.agentProfile ?? 'mock', prompt, clientMessageId }),
      )
    },
  }),
  stopSession: t.field({
    type: SessionRef,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await requireSession(ctx, id)
      return sessionOperation(() => ctx.sessions.stopSession(id))
    },
  }),
  resumeSession: t.field({
    type: SessionRef,
    description:
      'Relaunches the agent of a stopped, failed or recovered session. Records a lifecycle-only turn, which moves no activity time.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await requireSession(ctx, id)
      return sessionOperation(() => ctx.sessions.resumeSession(id))
    },
  }),
  deleteSession: t.id({
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await requireSession(ctx, id)
      await sessionOperation(() => ctx.sessions.deleteSession(id))
      return id
    },
  }),
  addMessage: t.field({
    type: AddMessagePayloadRef,
    description:
      'Idempotent by clientMessageId: a retry in the same task returns the stored message with replayed = true and dispatches nothing; reuse of the id in another task fails with CONFLICT.',
    args: { input: t.arg({ type: AddMessageInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const clientMessageId = validateClientMessageId(input.clientMessageId)
      const content = validatePrompt('content', input.content)
      await requireReadableTask(ctx, input.taskId)
      return sessionOperation(() =>
        ctx.sessions.sendPrompt({ taskId: input.taskId, sessionId: input.sessionId, clientMessageId, content }),
      )
    },
  }),
  respondToPermission: t.field({
    type: MessageRef,
    args: {
      sessionId: t.arg.id({ required: true }),
      pendingId: t.arg.id({ required: true }),
      optionId: t.arg.string({ required: true }),
    },
    resolve: async (_root, args, ctx) => {
      await requireSession(ctx, args.sessionId)
      return sessionOperation(() =>
        ctx.sessions.respond(args.sessionId, args.pendingId, 'PERMISSION_REQUEST', { optionId: args.optionId }),
      )
    },
  }),
  answerClarification: t.field({
    type: MessageRef,
    args: {
      sessionId: t.arg.id({ required: true }),
      pendingId: t.arg.id({ required: true }),
      answer: t.arg.string({ required: true }),
    },
    resolve: async (_root, args, ctx) => {
      await requireSession(ctx, args.sessionId)
      const answer = validatePrompt('answer', args.answer)
      return sessionOperation(() => ctx.sessions.respond(args.sessionId, args.pendingId, 'CLARIFICATION', { text: answer }))
    },
  }),
  dismissSessionError: t.field({
    type: SessionRef,
    args: { sessionId: t.arg.id({ required: true }) },
    resolve: async (_root, { sessionId }, ctx) => {
      await requireSession(ctx, sessionId)
      return ctx.sessions.dismissSessionError(sessionId)
    },
  }),
  focusSession: t.field({
    type: FocusAckRef,
    description: "WebSocket only: sets this connection's focused session (Git fast monitoring). Acknowledges; replays nothing.",
    args: { sessionId: t.arg.id({ required: true }) },
    resolve: async (_root, { sessionId }, ctx) => {
      if (!ctx.connection) throw badInput('focusSession is WebSocket only: it sets the focus of the connection it arrives on.')
      await requireSession(ctx, sessionId)
      await sessionOperation(() => ctx.sessions.focus(ctx.connection!.id, sessionId))
      ctx.connection.focus(sessionId)
      return { sessionId, focused: true }
    },
  }),
}))
