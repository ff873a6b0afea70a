import type { StreamTag } from './append-frame.ts'
import type { DeliveryTrace } from '../observability/tracing.ts'

/** How the scheduler must treat one result of a subscription operation (`trace`: the delivery it continues, tracing on). */
export type DeliveryTag =
  | { frameClass: 'semantic'; sessionId?: string; trace?: DeliveryTrace }
  | {
      frameClass: 'replaceable'
      trace?: DeliveryTrace
      sessionId: string
      key: string
      /**
       * A streamed message's frame, whose appends merge and are sliced (append-frame.ts: its
       * scheduler entry); absent: the frame replaces as is.
       */
      stream?: StreamTag
    }

/**
 * The gateway's routing table entry for one subscription, and the one way its resolver tells
 * the gateway how the result being executed is delivered. The gateway makes one per subscription
 * (Context.deliveryTags) and keeps it; the subscription's resolver tags each result it produces;
 * the gateway takes the tag when it writes that result's frame. One result at a time: graphql-ws
 * executes a subscription's next event only once the previous result is written.
 * An untagged result is semantic and belongs to no session.
 */
export class DeliveryTags {
  #pending: DeliveryTag | undefined

  /** The result being executed goes out as `tag` says. */
  tag(tag: DeliveryTag): void {
    this.#pending = tag
  }

  /** The tag of the result whose frame is being written; it applies to that frame alone. */
  take(): DeliveryTag | undefined {
    const tag = this.#pending
    this.#pending = undefined
    return tag
  }

  /** The tag of a result not written (the subscription's last frame, complete or error, follows its session). */
  get pending(): DeliveryTag | undefined {
    return this.#pending
  }
}
