import { EventEmitter } from 'node:events'
import type { Db } from './db.ts'

/**
 * Emitted after a write to the authoritative records has committed. The projector consumes
 * these (never raw agent streams); each names the task whose summary may have changed.
 */
export type SourceEventKind =
  | 'task.created'
  | 'task.updated'
  | 'task.deleted'
  | 'session.created'
  | 'session.changed'
  | 'session.deleted'
  | 'turn.started'
  | 'turn.changed'
  | 'turn.completed'
  | 'message.added'
  | 'message.updated'
  | 'message.deleted'
  | 'git.observed'
  | 'pullRequest.observed'
  | 'launchError.changed'

export interface SourceEvent {
  kind: SourceEventKind
  taskId: string
  workspaceId: string
  sessionId?: string
  /** The feed position the write took (task rows and deletions only). */
  feedSequence?: number
}

export interface SourceEvents {
  emit(event: SourceEvent): void
  on(listener: (event: SourceEvent) => void): () => void
}

export function createSourceEvents(): SourceEvents {
  const emitter = new EventEmitter()
  emitter.setMaxListeners(0)
  return {
    emit: (event) => void emitter.emit('event', event),
    on(listener) {
      emitter.on('event', listener)
      return () => emitter.off('event', listener)
    },
  }
}

export type Clock = () => Date

/** The store layer: the only owner of Prisma, with the clock and the source-event stream it writes with. */
export interface Store {
  db: Db
  events: SourceEvents
  now: Clock
  /**
   * Fencing: set, every write this store makes for a session (its messages, turns, state) is
   * conditional on this instance still owning the session, in the write itself; a write after
   * another instance took the session over changes nothing and throws OwnershipLostError.
   */
  owner?: string
}

export function createStore(db: Db, now: Clock = () => new Date()): Store {
  return { db, events: createSourceEvents(), now }
}

/** The same store, its session writes fenced by `instanceId`'s ownership (what an agent's runtime writes through). */
export function ownedBy(store: Store, instanceId: string): Store {
  return { ...store, owner: instanceId }
}

/** A fenced write found its session owned by another instance (or gone): nothing was written. */
export class OwnershipLostError extends Error {
  /** `subject`: what was written, e.g. "turn <id>". */
  constructor(readonly subject: string) {
    super(`${subject}: its session is no longer owned by this instance; the write was refused.`)
    this.name = 'OwnershipLostError'
  }
}
