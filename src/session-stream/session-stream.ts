/**
 * One subscription's session stream: SessionJoined first (with the snapshot when its connection
 * newly joins the session), then the live events as this subscriber renders them, and how the
 * gateway delivers each of them (DeliveryTag). Authorization is the schema's, before it opens one.
 */
import { RESYNC, type PubSub, type SessionEventPayload } from '../pubsub/pubsub.ts'
import { mapAsyncIterator } from '../util/async-iterators.ts'
import { messagesOfSession } from '../store/sessions.ts'
import type { SessionRow } from '../store/rows.ts'
import type { Store } from '../store/store.ts'
import type { ConnectionScope } from './connection-scope.ts'
import type { DeliveryTag, DeliveryTags } from '../outbound/delivery-tags.ts'
import { AppendChain, StreamTag, streamTag } from '../outbound/append-frame.ts'
import { sharedSessionEvent, type SessionEventValue } from './session-event-reads.ts'
import { tracing } from '../observability/tracing.ts'

const SNAPSHOT_MESSAGES = 100

export interface SessionStreamSources {
  store: Store
  pubsub: PubSub
  /** The connection the subscription arrived on (none over HTTP): a duplicate join gets no snapshot. */
  connection?: ConnectionScope
  /** Over a WebSocket: where the stream says, as it yields each event, how the gateway delivers it. */
  deliveryTags?: DeliveryTags
}

/**
 * Opens the stream of `session` for one subscriber. `beforeEachEvent` runs before each live event
 * is read for it (the schema makes its loaders fresh per event).
 */
export async function openSessionStream(
  sources: SessionStreamSources,
  session: SessionRow,
  beforeEachEvent: () => void,
): Promise<AsyncIterableIterator<SessionEventValue>> {
  const sessionId = session.id
  const chain = new AppendChain()
  // Live events first, snapshot second: nothing that happens in between is lost.
  const live = sources.pubsub.subscribe('session', sessionId, {
    onOverflow: () => RESYNC.session(sessionId, 'subscriber fell behind; events were dropped'),
  })
  const newlyJoined = sources.connection ? sources.connection.join(sessionId) : true
  const leave = () => sources.connection?.leave(sessionId)
  try {
    const snapshot = newlyJoined
      ? { session, messages: (await messagesOfSession(sources.store, sessionId, SNAPSHOT_MESSAGES)) ?? [] }
      : null
    for (const message of snapshot?.messages ?? []) chain.seed(message.id, message.version, message.content.length)
    const joined: SessionEventValue = { type: 'SessionJoined', sessionId, snapshot }
    const events = mapAsyncIterator(live, (payload) => {
      beforeEachEvent()
      if (!tracing.on) return resolveForSubscriber(sources.store, payload, chain)
      // The event read for this subscriber carries its payload's delivery on to the frame it becomes.
      return resolveForSubscriber(sources.store, payload, chain).then((event) => (event && tracing.stages.carry(payload, event), event))
    })
    const tags = sources.deliveryTags
    return startingWith(joined, events, leave, tags && ((event) => tags.tag(deliveryTagOf(event))))
  } catch (error) {
    leave()
    await live.return?.()
    throw error
  }
}

/**
 * One subscriber's view of an event: rows shared with the other subscribers, and the append
 * decided by what this subscription delivered before (its chain).
 */
async function resolveForSubscriber(store: Store, payload: SessionEventPayload, chain: AppendChain): Promise<SessionEventValue | undefined> {
  const event = await sharedSessionEvent(store, payload)
  if (event?.type === 'MessageAdded') chain.seed(event.message.id, event.message.version, event.message.content.length)
  else if (event?.type === 'MessageDeleted') chain.forget(event.messageId)
  if (event?.type !== 'MessageUpdated' || payload.type !== 'MessageUpdated') return event
  const change = payload.append ?? (payload.contentUnchanged ? 'unchanged' : undefined)
  const { id, version, content } = event.message
  if (change === undefined) {
    // A full row: whatever changed, the client gets this version whole.
    if (content === undefined) chain.forget(id)
    else chain.seed(id, version, content.length)
    return { ...event, stream: streamTag(id, version, event.append, chain) }
  }
  const append = chain.advance(id, payload.version, change)
  // This client holds that version already (its snapshot or MessageAdded was read after it).
  if (append === 'stale') return undefined
  return { ...event, append, stream: streamTag(id, version, append, chain) }
}

/**
 * The MessageUpdated frame an execution renders, if it renders one: graphql executes each event
 * of a subscription with the event as root value, so every resolver under it reaches its record.
 */
export function streamBeingRendered(info: { rootValue: unknown }): StreamTag | undefined {
  const stream = (info.rootValue as { stream?: unknown } | null | undefined)?.stream
  return stream instanceof StreamTag ? stream : undefined
}

/** How the gateway delivers the event: MessageUpdated is replaceable (its appends merge), the rest semantic. */
function deliveryTagOf(event: SessionEventValue): DeliveryTag {
  const tag = untracedTagOf(event)
  if (tracing.on) tag.trace = tracing.stages.deliveryOf(event)
  return tag
}

function untracedTagOf(event: SessionEventValue): DeliveryTag {
  if (event.type !== 'MessageUpdated') return { frameClass: 'semantic', sessionId: sessionOf(event) }
  const stream = event.stream
  // Delivered through the scheduler: its leaves render markers, spliced per slice (append-frame.ts).
  if (stream) stream.templated = true
  return {
    frameClass: 'replaceable',
    sessionId: event.message.sessionId,
    key: event.message.id,
    stream,
  }
}

function sessionOf(event: Exclude<SessionEventValue, { type: 'MessageUpdated' }>): string {
  switch (event.type) {
    case 'MessageAdded':
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

/** Yields `first`, then `rest`, each handed to `onYield` as it goes; return() reaches `rest` and runs `onEnd` exactly once. */
function startingWith<T>(first: T, rest: AsyncIterableIterator<T>, onEnd: () => void, onYield?: (value: T) => void): AsyncIterableIterator<T> {
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
        onYield?.(first)
        return { value: first, done: false }
      }
      const result = await rest.next()
      if (result.done) end()
      else onYield?.(result.value)
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
