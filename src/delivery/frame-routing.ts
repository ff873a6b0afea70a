import type { Connection } from './gateway-connection.ts'
import type { DeliveryTag } from '../outbound/delivery-tags.ts'
import { tracing } from '../observability/tracing.ts'
import { DETACHED } from './detached-members.ts'
import { streamFrame } from '../outbound/append-frame.ts'

/** graphql-ws writes `{"id":…,"type":…,"payload":…}` in that order; matching the head spares parsing a multi-MB payload per frame. */
const FRAME_HEAD = /^\{"id":("(?:[^"\\]|\\.)*"),"type":"([a-z_]+)"/

export function frameHeader(data: string): { type: string; id?: string } {
  const head = FRAME_HEAD.exec(data)
  if (head) return { id: JSON.parse(head[1]!) as string, type: head[2]! }
  return JSON.parse(data) as { type: string; id?: string }
}

/**
 * Sorts each outgoing graphql-ws frame into its delivery class: results of queries and mutations
 * (and every frame of no subscription) are control frames; a subscription's result goes as its
 * resolver tagged it (delivery-tags.ts), semantic when untagged.
 */
export function routeFrame(connection: Connection, data: string): void {
  const { type, id } = frameHeader(data)
  const tags = id === undefined ? undefined : connection.subscriptions.get(id)
  if (!tags) return connection.scheduler.enqueueControl(data)
  // The end of graphql-ws's stand-in for a member the gateway runs: the operation goes on.
  if (tags === DETACHED) return void setImmediate(compactOperations, connection)
  if (type !== 'next') {
    // The subscription's last frame (complete or error): queued behind its results, then its entry goes.
    connection.subscriptions.delete(id!)
    return connection.scheduler.enqueueSemantic(data, tags.pending?.sessionId)
  }
  const tag = tags.take()
  if (tag?.trace && tracing.on) {
    // A frame can be megabytes, and only the first frames of a delivery get a span: its size is measured only then.
    return tracing.stages.frameWrite(tag.trace, tag.frameClass, () => Buffer.byteLength(data), () => {
      enqueueTagged(connection, id!, data, tag)
      const depth = connection.scheduler.depth
      return depth.semantic + depth.replaceable
    })
  }
  enqueueTagged(connection, id!, data, tag)
}

function enqueueTagged(connection: Connection, id: string, data: string, tag: DeliveryTag | undefined): void {
  if (tag?.frameClass === 'replaceable') {
    // Keyed per subscription too: two subscriptions of one session on a connection each follow their own appends.
    const frame = tag.stream ? streamFrame(data, tag.stream) : data
    return connection.scheduler.enqueueReplaceable(frame, tag.sessionId, `${tag.key} ${id}`)
  }
  connection.scheduler.enqueueSemantic(data, tag?.sessionId)
}

/**
 * graphql-ws's table of the socket's operations, once its stand-ins are gone: an object that had
 * keys deleted stays a dictionary of a few hundred bytes, so an empty one is replaced by a fresh
 * `{}` (graphql-ws reads the table through its context every time).
 */
function compactOperations(connection: Connection): void {
  const context = connection.socketContext
  if (!context) return
  for (const _ in context.subscriptions) return
  ;(context as { subscriptions: typeof context.subscriptions }).subscriptions = {}
}
