import { builder } from '../builder.ts'
import { createLoaders } from '../loaders.ts'
import { notFound } from '../../errors.ts'
import { RESYNC, type SessionEventPayload } from '../../pubsub/pubsub.ts'
import { transformIterator } from '../../pubsub/transform.ts'
import { findTurn } from '../../store/turns.ts'
import { findMessage, findMessageWithoutContent } from '../../store/messages.ts'
import { AppendChain, streamTag, type Append } from '../../delivery/message-append.ts'
import type { MessageValue } from '../message-content.ts'
import { responsePathAsArray, type GraphQLResolveInfo } from 'graphql'
import { findSessions, gitOfSessions, messagesOfSession } from '../../store/sessions.ts'
import type { Store } from '../../store/store.ts'
import type { Context } from '../context.ts'
import type { MessageRow, SessionRow, TurnRow } from '../../store/rows.ts'
import { requireReadableSession } from '../authorize.ts'
import { MessageRef, SessionModelsRef, SessionRef, sessionModels, TurnRef } from './session.ts'

const SNAPSHOT_MESSAGES = 100
import { RepositoryGitStatusRef } from './git.ts'

type GitStatus = (typeof RepositoryGitStatusRef)['$inferType']
type Models = (typeof SessionModelsRef)['$inferType']

/** Session stream events as delivered; `type` picks the GraphQL object. */
export type SessionEventValue =
  | { type: 'SessionJoined'; sessionId: string; snapshot: { session: SessionRow; messages: MessageRow[] } | null }
  | { type: 'MessageAdded'; message: MessageRow }
  /** `chain`: the subscription's, set once the event is resolved for it. */
  | { type: 'MessageUpdated'; message: MessageValue; append: Append | null; chain?: AppendChain }
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

/** The leaves' response paths go to the gateway, which may rewrite them when appends merge. */
function recordLeaf(ctx: Context, info: GraphQLResolveInfo, field: keyof Append) {
  if (ctx.deliveryTag?.frameClass === 'replaceable') ctx.deliveryTag.stream?.leaves.push({ path: responsePathAsArray(info.path), field })
}

const MessageAppendRef = builder.objectRef<Append>('MessageAppend').implement({
  description: '(v1.2) Text appended to a message\'s content.',
  fields: (t) => ({
    offset: t.int({
      description: 'Length of the content before this append, in UTF-16 code units (JavaScript string length).',
      resolve: (a, _args, ctx, info) => {
        recordLeaf(ctx, info, 'offset')
        return a.offset
      },
    }),
    text: t.string({
      resolve: (a, _args, ctx, info) => {
        recordLeaf(ctx, info, 'text')
        return a.text
      },
    }),
  }),
})

const MessageUpdatedRef = builder.objectRef<Of<'MessageUpdated'>>('MessageUpdated').implement({
  description: 'Replaceable: a newer update for the same message may supersede an undelivered older one.',
  fields: (t) => ({
    message: t.field({ type: MessageRef, resolve: (e) => e.message }),
    append: t.field({
      type: MessageAppendRef,
      nullable: true,
      description:
        "(v1.2) Set when the message's content only grew since the previous MessageUpdated delivered on this subscription: the text appended at `offset`. A client that selects `append` (and not `message.content`) receives each streamed byte once; undelivered appends of one message merge into one. Null after a gap or a non-append change: then read `message.content`. (v1.3) An append carries at most 16 KiB of text (UTF-8). Growth beyond that arrives as several MessageUpdated frames, which may share one message.version: a client applies an append whose offset equals the length it holds, whatever the version, ignores one that ends at or before that length, and treats any other offset as a gap.",
      resolve: (e, _args, ctx, info) => {
        if (!e.append) return null
        if (ctx.deliveryTag?.frameClass === 'replaceable') ctx.deliveryTag.stream?.appendPaths.push(responsePathAsArray(info.path))
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

/** Reads what one published session event renders (rows only; nothing viewer-specific). */
async function readSessionEvent(store: Store, payload: SessionEventPayload): Promise<SessionEventValue | undefined> {
  switch (payload.type) {
    case 'MessageAdded': {
      const message = await findMessage(store, payload.messageId)
      return message ? { type: payload.type, message } : undefined
    }
    case 'MessageUpdated': {
      if (payload.append || payload.contentUnchanged) {
        // The content is read only if some subscriber selects it (message-content.ts). The frame
        // describes the publication's version even when the row has moved on, so that a client
        // keeping the highest version does not skip the next append.
        const row = await findMessageWithoutContent(store, payload.messageId)
        return row ? { type: 'MessageUpdated', message: { ...row, version: payload.version }, append: null } : undefined
      }
      const message = await findMessage(store, payload.messageId)
      return message ? { type: 'MessageUpdated', message, append: null } : undefined
    }
    case 'MessageDeleted':
      return { type: 'MessageDeleted', sessionId: payload.sessionId, messageId: payload.messageId }
    case 'SessionStateChanged': {
      const [session] = await findSessions(store, [payload.sessionId])
      return session ? { type: 'SessionStateChanged', session } : undefined
    }
    case 'SessionModelsUpdated': {
      const [session] = await findSessions(store, [payload.sessionId])
      return session ? { type: 'SessionModelsUpdated', sessionId: session.id, models: sessionModels(session) } : undefined
    }
    case 'TurnStarted':
    case 'TurnCompleted': {
      const turn = await findTurn(store, payload.turnId)
      return turn ? { type: payload.type, turn } : undefined
    }
    case 'SessionGitUpdated':
      return { type: 'SessionGitUpdated', sessionId: payload.sessionId, git: await gitOfSessions(store, [payload.sessionId]) }
    case 'SessionResync':
      return payload
  }
}

/**
 * The pub/sub hands the same payload object to every local subscriber of the event (in process
 * and after one JSON.parse per Redis message), so keying by identity makes the read once per
 * event per instance, whatever the number of subscribers; the entry goes when the event does.
 * Publishers build a new payload object per publish, so an entry never outlives its event's rows.
 */
const sharedReads = new WeakMap<SessionEventPayload, Promise<SessionEventValue | undefined>>()

function sharedSessionEvent(store: Store, payload: SessionEventPayload): Promise<SessionEventValue | undefined> {
  let read = sharedReads.get(payload)
  if (!read) {
    // A failed read fails this event for every subscriber alike: each subscription ends with an error frame.
    read = readSessionEvent(store, payload)
    sharedReads.set(payload, read)
  }
  return read
}

/**
 * One subscriber's view of an event: loaders fresh for this event, rows shared with the other
 * subscribers, and the append decided by what this subscription delivered before.
 */
async function resolveSessionEvent(ctx: Context, payload: SessionEventPayload, chain: AppendChain): Promise<SessionEventValue | undefined> {
  ctx.loaders = createLoaders(ctx, ctx.principal?.userId)
  const event = await sharedSessionEvent(ctx.store, payload)
  if (event?.type === 'MessageAdded') chain.seed(event.message.id, event.message.version, event.message.content.length)
  else if (event?.type === 'MessageDeleted') chain.forget(event.messageId)
  if (event?.type !== 'MessageUpdated' || payload.type !== 'MessageUpdated') return event
  const change = payload.append ?? (payload.contentUnchanged ? 'unchanged' : undefined)
  if (change === undefined) {
    // A full row: whatever changed, the client gets this version whole.
    const { id, version, content } = event.message
    if (content === undefined) chain.forget(id)
    else chain.seed(id, version, content.length)
    return { ...event, chain }
  }
  const append = chain.advance(event.message.id, payload.version, change)
  // This client holds that version already (its snapshot or MessageAdded was read after it).
  if (append === 'stale') return undefined
  return { ...event, append, chain }
}

/** Yields `first`, then `rest`; return() reaches `rest` and runs `onEnd` exactly once. */
function startingWith<T>(first: T, rest: AsyncIterableIterator<T>, onEnd: () => void): AsyncIterableIterator<T> {
  let sentFirst = false
  let ended = false
  const end = () => {
    if (!ended) {
      ended = true
      onEnd()
    }
  }
  const iterator: AsyncIterableIterator<T> = {
    async next() {
      if (!sentFirst) {
        sentFirst = true
        return { value: first, done: false }
      }
      const result = await rest.next()
      if (result.done) end()
      return result
    },
    async return() {
      end()
      await rest.return?.()
      return { value: undefined, done: true }
    },
    async throw(error: unknown) {
      end()
      await rest.return?.()
      throw error
    },
    [Symbol.asyncIterator]() {
      return iterator
    },
  }
  return iterator
}

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
      const chain = new AppendChain()
      // Live events first, snapshot second: nothing that happens in between is lost.
      const live = ctx.pubsub.subscribe('session', sessionId, {
        onOverflow: () => RESYNC.session(sessionId, 'subscriber fell behind; events were dropped'),
      })
      const newlyJoined = ctx.connection ? ctx.connection.join(sessionId) : true
      const leave = () => ctx.connection?.leave(sessionId)
      try {
        const snapshot = newlyJoined
          ? { session, messages: (await messagesOfSession(ctx.store, sessionId, SNAPSHOT_MESSAGES)) ?? [] }
          : null
        for (const message of snapshot?.messages ?? []) chain.seed(message.id, message.version, message.content.length)
        const joined: SessionEventValue = { type: 'SessionJoined', sessionId, snapshot }
        relaunchOnOpen(ctx, session)
        return startingWith(joined, transformIterator(live, (payload) => resolveSessionEvent(ctx, payload, chain)), leave)
      } catch (error) {
        leave()
        await live.return?.()
        throw error
      }
    },
    resolve: (event, _args, ctx) => {
      ctx.deliveryTag =
        event.type === 'MessageUpdated'
          ? {
              frameClass: 'replaceable',
              sessionId: event.message.sessionId,
              key: event.message.id,
              ...(event.chain && { stream: streamTag(event.message.id, event.message.version, event.append, event.chain) }),
            }
          : { frameClass: 'semantic', sessionId: sessionOf(event) }
      return event
    },
  }),
)

function sessionOf(event: SessionEventValue): string {
  switch (event.type) {
    case 'MessageAdded':
    case 'MessageUpdated':
      return event.message.sessionId
    case 'SessionStateChanged':
      return event.session.id
    case 'TurnStarted':
    case 'TurnCompleted':
      return event.turn.sessionId
    default:
      return event.sessionId
  }
}
