/**
 * Typed pub/sub: one interface, an in-process implementation (one instance) and a Redis one
 * (several instances share the feed). Payloads are plain JSON so they can cross instances;
 * subscribers load what they render. Delivery is at-most-once.
 */

import type { SummaryPayload } from '../summary/types.ts'
import type { InstanceMessage } from '../instances/commands.ts'
import type { AccessEvent } from '../access/access-events.ts'
import type { StageContext } from '../observability/tracing.ts'

/** A summary replacement carries the whole bounded summary, so subscribers need no read per event. */
export interface SummaryUpdatedPayload {
  type: 'TaskStatusSummaryUpdated'
  workspaceId: string
  taskId: string
  revision: number
  /** ISO-8601 projection time */
  updatedAt: string
  summary: SummaryPayload
  /** The feed position the revision took in the database. */
  sequence: number
}

/**
 * Each change carries the feed position it took in the database (allocated per workspace in the
 * writing transaction), so subscribers on every instance see the same cursors and can tell a
 * missing one.
 */
export type WorkspaceEventPayload =
  | { type: 'TaskUpserted'; workspaceId: string; taskId: string; sequence: number }
  | { type: 'TaskDeleted'; workspaceId: string; taskId: string; sequence: number }
  | SummaryUpdatedPayload
  | { type: 'WorkspaceResync'; workspaceId: string; reason: string }

/**
 * Session stream events across instances: ids only (plus a streamed window's appended text); the
 * delivery layer loads rows per event. MessageUpdated is the replaceable class.
 */
export type SessionEventPayload =
  | { type: 'MessageAdded'; sessionId: string; messageId: string }
  /**
   * `append`: the content at `version` is the content at `version - 1` (of length `offset`) plus
   * `text`. `contentUnchanged`: only other fields changed (a final status). Neither: anything may
   * have changed, content included.
   */
  | {
      type: 'MessageUpdated'
      sessionId: string
      messageId: string
      version: number
      append?: { offset: number; text: string }
      contentUnchanged?: true
    }
  | { type: 'MessageDeleted'; sessionId: string; messageId: string }
  /** `state` absent: the state did not change, only what the agent published (its plan or mode). */
  | { type: 'SessionStateChanged'; sessionId: string; state?: string }
  | { type: 'SessionModelsUpdated'; sessionId: string }
  | { type: 'TurnStarted'; sessionId: string; turnId: string }
  | { type: 'TurnCompleted'; sessionId: string; turnId: string }
  | { type: 'SessionGitUpdated'; sessionId: string }
  | { type: 'SessionResync'; sessionId: string; reason: string }

export interface Topics {
  workspace: WorkspaceEventPayload
  session: SessionEventPayload
  /** Commands forwarded to the instance that owns a session, and their replies (key: instance id). */
  instance: InstanceMessage
  /** Revoked tokens and memberships (one key, `all`): every instance ends what they opened. */
  access: AccessEvent
}

export type Topic = keyof Topics

export interface SubscribeOptions<T extends Topic> {
  /** Events held for a slow consumer; past it the backlog is dropped and replaced by this payload, when given. */
  bufferLimit?: number
  onOverflow?: () => Topics[T]
}

export interface PubSub {
  /**
   * `trace` (tracing on): the publication is a stage of that trace, and the payload carries its
   * W3C `traceparent` to every instance's subscribers.
   */
  publish<T extends Topic>(topic: T, key: string, payload: Topics[T], trace?: StageContext): Promise<void>
  subscribe<T extends Topic>(topic: T, key: string, options?: SubscribeOptions<T>): AsyncIterableIterator<Topics[T]>
  close(): Promise<void>
}

export const channelOf = (topic: Topic, key: string) => `${topic}:${key}`

/** What a subscriber of each topic receives when deltas may have been lost (overflow, reconnect). */
export const RESYNC: { [T in Topic]: (key: string, reason: string) => Topics[T] } = {
  workspace: (workspaceId, reason) => ({ type: 'WorkspaceResync', workspaceId, reason }),
  session: (sessionId, reason) => ({ type: 'SessionResync', sessionId, reason }),
  instance: (_instanceId, reason) => ({ kind: 'resync', reason }),
  access: () => ({ type: 'resync' }),
}
