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
}

export function createStore(db: Db, now: Clock = () => new Date()): Store {
  return { db, events: createSourceEvents(), now }
}
