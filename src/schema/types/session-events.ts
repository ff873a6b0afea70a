import { builder } from '../builder.ts'
import { createLoaders } from '../loaders.ts'
import { notFound } from '../../errors.ts'
import { responsePathAsArray, type FieldNode, type GraphQLResolveInfo } from 'graphql'
import type { Append } from '../../outbound/append-frame.ts'
import type { SessionEventValue } from '../../session-stream/session-event-reads.ts'
import { openSessionStream, streamBeingRendered } from '../../session-stream/session-stream.ts'
import type { Context } from '../context.ts'
import { requireReadableSession } from '../authorize.ts'
import { MessageRef, SessionModelsRef, SessionRef, sessionModels, TurnRef } from './session.ts'
import { RepositoryGitStatusRef } from './git.ts'

type Of<T extends SessionEventValue['type']> = Extract<SessionEventValue, { type: T }>

const SessionSnapshotRef = builder
  .objectRef<NonNullable<Of<'SessionJoined'>['snapshot']>>('SessionSnapshot')
  .implement({
    fields: (t) => ({
      session: t.field({ type: SessionRef, resolve: (s) => s.session }),
      messages: t.field({ type: [MessageRef], description: 'The newest messages, oldest first.', resolve: (s) => s.messages }),
    }),
  })

const SessionJoinedRef = builder.objectRef<Of<'SessionJoined'>>('SessionJoined').implement({
  fields: (t) => ({
    sessionId: t.exposeID('sessionId'),
    snapshot: t.field({
      type: SessionSnapshotRef,
      nullable: true,
      description: 'Null when this connection was already a member of the session (duplicate subscribe).',
      resolve: (e) => e.snapshot,
    }),
  }),
})

const MessageAddedRef = builder.objectRef<Of<'MessageAdded'>>('MessageAdded').implement({
  fields: (t) => ({ message: t.field({ type: MessageRef, resolve: (e) => e.message }) }),
})

/**
 * A frame delivered through the scheduler renders its `offset` and `text` as markers, spliced per
 * slice (outbound/append-frame.ts); elsewhere the values themselves.
 */
const MessageAppendRef = builder.objectRef<Append>('MessageAppend').implement({
  description: '(v1.2) Text appended to a message\'s content.',
  fields: (t) => ({
    offset: t.int({
      description: 'Length of the content before this append, in UTF-16 code units (JavaScript string length).',
      resolve: (a, _args, _ctx, info) => streamBeingRendered(info)?.offset(a) ?? a.offset,
    }),
    text: t.string({ resolve: (a, _args, _ctx, info) => streamBeingRendered(info)?.text(a) ?? a.text }),
  }),
})

/**
 * The response path of an `append` field: the same for every event of a subscription (no list on
 * the way), so computed on its first frame and kept with the document's field node.
 */
const appendPaths = new WeakMap<FieldNode, readonly (string | number)[]>()
function appendPathOf(info: GraphQLResolveInfo): readonly (string | number)[] {
  const node = info.fieldNodes[0]!
  let path = appendPaths.get(node)
  if (!path) appendPaths.set(node, (path = responsePathAsArray(info.path)))
  return path
}

const MessageUpdatedRef = builder.objectRef<Of<'MessageUpdated'>>('MessageUpdated').implement({
  description: 'Replaceable: a newer update for the same message may supersede an undelivered older one.',
  fields: (t) => ({
    message: t.field({ type: MessageRef, resolve: (e) => e.message }),
    append: t.field({
      type: MessageAppendRef,
      nullable: true,
      description:
        "(v1.2) Set when the message's content only grew since the previous MessageUpdated delivered on this subscription: the text appended at `offset`. A client that selects `append` (and not `message.content`) receives each streamed byte once; undelivered appends of one message merge into one. Null after a gap or a non-append change: then read `message.content`. (v1.3) An append carries at most 16 KiB of text (UTF-8). Growth beyond that arrives as several MessageUpdated frames, which may share one message.version: a client applies an append whose offset equals the length it holds, whatever the version, ignores one that ends at or before that length, and treats any other offset as a gap.",
      resolve: (e, _args, _ctx, info) => {
        if (!e.append) return null
        e.stream?.appendPaths.push(appendPathOf(info))
        return e.append
      },
    }),
  }),
})

const MessageDeletedRef = builder.objectRef<Of<'MessageDeleted'>>('MessageDeleted').implement({
  fields: (t) => ({ sessionId: t.exposeID('sessionId'), messageId: t.exposeID('messageId') }),
})

const SessionStateChangedRef = builder.objectRef<Of<'SessionStateChanged'>>('SessionStateChanged').implement({
  fields: (t) => ({ session: t.field({ type: SessionRef, resolve: (e) => e.session }) }),
})

const SessionModelsUpdatedRef = builder.objectRef<Of<'SessionModelsUpdated'>>('SessionModelsUpdated').implement({
  fields: (t) => ({
    sessionId: t.exposeID('sessionId'),
    models: t.field({ type: SessionModelsRef, resolve: (e) => sessionModels(e.session) }),
  }),
})

const TurnStartedRef = builder.objectRef<Of<'TurnStarted'>>('TurnStarted').implement({
  fields: (t) => ({ turn: t.field({ type: TurnRef, resolve: (e) => e.turn }) }),
})

const TurnCompletedRef = builder.objectRef<Of<'TurnCompleted'>>('TurnCompleted').implement({
  fields: (t) => ({ turn: t.field({ type: TurnRef, resolve: (e) => e.turn }) }),
})

const SessionGitUpdatedRef = builder.objectRef<Of<'SessionGitUpdated'>>('SessionGitUpdated').implement({
  fields: (t) => ({
    sessionId: t.exposeID('sessionId'),
    git: t.field({ type: [RepositoryGitStatusRef], resolve: (e) => e.git }),
  }),
})

const SessionResyncRef = builder.objectRef<Of<'SessionResync'>>('SessionResync').implement({
  description: 'Intermediate events were dropped or may have been missed: refetch the session.',
  fields: (t) => ({ sessionId: t.exposeID('sessionId'), reason: t.exposeString('reason') }),
})

const SessionEventRef = builder.unionType('SessionEvent', {
  types: [
    SessionJoinedRef,
    MessageAddedRef,
    MessageUpdatedRef,
    MessageDeletedRef,
    SessionStateChangedRef,
    SessionModelsUpdatedRef,
    TurnStartedRef,
    TurnCompletedRef,
    SessionGitUpdatedRef,
    SessionResyncRef,
  ],
  resolveType: (event) => event.type,
})

/**
 * Opening a session relaunches its agent where none runs any more (after a restart, or its owner's
 * lease expired), on the session's owner, as prompting does (MAPPING "Outages and stalls"). The
 * subscription neither waits for it nor fails with it: the events of the launch reach it live.
 */
function relaunchOnOpen(ctx: Context, session: { id: string; state: string }): void {
  void Promise.resolve()
    .then(() => ctx.sessions.openSession(session.id, session.state))
    .catch((error: unknown) => ctx.logger.warn({ err: error, sessionId: session.id, action: 'session.open' }, 'opening a session did not relaunch its agent'))
}

builder.subscriptionField('sessionEvents', (t) =>
  t.field({
    type: SessionEventRef,
    description:
      'Session detail stream. Its first event is SessionJoined; the snapshot is sent only when this connection newly joins the session.',
    args: { sessionId: t.arg.id({ required: true }) },
    subscribe: async (_root, { sessionId }, ctx) => {
      const session = await requireReadableSession(ctx, sessionId)
      if (!session) throw notFound('Session', sessionId)
      ctx.onWorkspaceScope?.((await ctx.loaders.task.load(session.taskId))!.workspaceId)
      // Loaders fresh for each event: its rows are read anew, not served from the subscription's start.
      const stream = await openSessionStream(ctx, session, () => {
        ctx.loaders = createLoaders(ctx, ctx.principal?.userId)
      })
      relaunchOnOpen(ctx, session)
      return stream
    },
    // The stream tagged the event with how the gateway delivers it as it yielded it.
    resolve: (event) => event,
  }),
)
