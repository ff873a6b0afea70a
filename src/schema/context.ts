import type { Logger } from '../observability/logger.ts'
import type { Projector } from '../projector/projector.ts'
import type { SessionCommands } from '../instances/session-commands.ts'
import type { GitMonitor } from '../git/monitor.ts'
import type { ConnectionScope } from '../session-stream/connection-scope.ts'
import type { DeliveryTags } from '../outbound/delivery-tags.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import type { Store } from '../store/store.ts'
import type { FeedServices } from '../feed/resumable-feed.ts'
import type { FeedTap } from '../feed/feed-tap.ts'
import type { Principal } from '../store/users.ts'
import type { AccessControl } from '../access/access-control.ts'
import { createLoaders, type Loaders } from './loaders.ts'

/** The server's services, shared by every operation. */
export interface ContextServices {
  store: Store
  pubsub: PubSub
  projector: Projector
  sessions: SessionCommands
  git: GitMonitor
  logger: Logger
  /** REPOSITORY_ROOTS: a task repository's localPath must resolve inside one of them. */
  repositoryRoots: readonly string[]
  /** The resumable workspace feed (database epoch, positions, replay). */
  feed: FeedServices
  /** Callers by token, and the revocations that end what they opened. */
  access: AccessControl
  /** Names of the agent profiles this server can start (never their commands or environments). */
  agentProfiles: readonly string[]
}

/** What every resolver sees: the services, and what is this operation's own. Built per HTTP request and per WebSocket operation. */
export interface Context extends ContextServices {
  principal: Principal | null
  loaders: Loaders
  /** Set for operations that arrive over a WebSocket connection. */
  connectionId?: string
  connection?: ConnectionScope
  /**
   * Given by the transport for a subscription: the resolver names the workspace whose membership
   * allowed it, and the transport ends the subscription once that membership is removed.
   */
  onWorkspaceScope?: (workspaceId: string) => void
  /** Given by the gateway to a subscription: its resolver tags each result with its delivery class and key (delivery-tags.ts). */
  deliveryTags?: DeliveryTags
  /** Given by the gateway to a workspace feed subscription in a cohort: positions and replay-only mode (feed-tap.ts). */
  feedTap?: FeedTap
}

export function buildContext(services: ContextServices, principal: Principal | null, connection?: ConnectionScope): Context {
  return { ...services, principal, connectionId: connection?.id, connection, loaders: createLoaders(services, principal?.userId) }
}
