import { builder } from '../builder.ts'
import { requirePrincipal } from '../authorize.ts'
import { notImplemented } from '../../errors.ts'
import type { MessageRow, SessionRow, TurnRow } from '../../store/rows.ts'
import { MessageRef, SessionModelsRef, SessionRef, TurnRef } from './session.ts'
import { RepositoryGitStatusRef } from './git.ts'

type GitStatus = (typeof RepositoryGitStatusRef)['$inferType']
type Models = (typeof SessionModelsRef)['$inferType']

/** Session stream events as delivered; `type` picks the GraphQL object. */
export type SessionEventValue =
  | { type: 'SessionJoined'; sessionId: string; snapshot: { session: SessionRow; messages: MessageRow[] } | null }
  | { type: 'MessageAdded'; message: MessageRow }
  | { type: 'MessageUpdated'; message: MessageRow }
  | { type: 'MessageDeleted'; sessionId: string; messageId: string }
  | { type: 'SessionStateChanged'; session: SessionRow }
  | { type: 'SessionModelsUpdated'; sessionId: string; models: Models }
  | { type: 'TurnStarted'; turn: TurnRow }
  | { type: 'TurnCompleted'; turn: TurnRow }
  | { type: 'SessionGitUpdated'; sessionId: string; git: GitStatus[] }
  | { type: 'SessionResync'; sessionId: string; reason: string }

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

const MessageUpdatedRef = builder.objectRef<Of<'MessageUpdated'>>('MessageUpdated').implement({
  description: 'Replaceable: a newer update for the same message may supersede an undelivered older one.',
  fields: (t) => ({ message: t.field({ type: MessageRef, resolve: (e) => e.message }) }),
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
    models: t.field({ type: SessionModelsRef, resolve: (e) => e.models }),
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

builder.subscriptionField('sessionEvents', (t) =>
  t.field({
    type: SessionEventRef,
    description:
      'Session detail stream. Its first event is SessionJoined; the snapshot is sent only when this connection newly joins the session.',
    args: { sessionId: t.arg.id({ required: true }) },
    subscribe: (_root, _args, ctx): AsyncIterable<SessionEventValue> => {
      requirePrincipal(ctx)
      throw notImplemented('Subscription.sessionEvents')
    },
    resolve: (event) => event,
  }),
)
