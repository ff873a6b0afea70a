import type { ExecutionResult, GraphQLError } from 'graphql'
import { DeliveryTags } from '../outbound/delivery-tags.ts'
import { nextFrameHead, SharedFrame } from '../outbound/shared-frame.ts'
import type { CohortSink } from './cohorts.ts'
import type { Connection } from './gateway-connection.ts'

/**
 * The routing table's entry for a cohort member the gateway runs itself: graphql-ws has let go of
 * the operation (it ran a stand-in that ended at once), so its own frames for the id (that
 * stand-in's `complete`) are not the client's to see.
 */
export const DETACHED = new DeliveryTags()

/** What graphql-ws runs in the member's place: it ends at once, and graphql-ws forgets the operation. */
export const STAND_IN: AsyncIterableIterator<ExecutionResult> = {
  next: () => Promise.resolve({ value: undefined, done: true }),
  return: () => Promise.resolve({ value: undefined, done: true }),
  [Symbol.asyncIterator]() {
    return STAND_IN
  },
}

/** A member as the gateway holds it once detached (cohorts.ts: CohortMember, ResumedMember). */
export interface Detachable {
  detach(ended: (error?: GraphQLError) => void): void
  return(): Promise<unknown>
}

/** How a detached member's end is written and accounted (ws-gateway.ts). */
export interface MemberEnds {
  /** The operation's error frame payload, shaped and counted as graphql-ws's onError does. */
  errorPayload(errors: readonly GraphQLError[]): unknown
  /** The operation ended: its metrics, its access holds. */
  ended(connection: Connection, id: string): void
}

/**
 * A cohort member's sink: its results written as the `next` frames graphql-ws writes, straight
 * to its connection's scheduler, its own head (the operation id) and the body every member
 * shares, so a delivery copies no payload bytes (outbound/ws-writer.ts writes them as a list).
 * Once started, the gateway runs the member itself (`detach`): graphql-ws's per-operation state
 * (the subscribe message, the execution arguments, its loop awaiting the next result) goes,
 * and the member's end, the client's complete, a revocation or the socket's close end it here.
 */
export class MemberSink implements CohortSink {
  #head: Buffer | undefined
  #member: Detachable | undefined

  constructor(
    private readonly connection: Connection,
    private readonly id: string,
    private readonly bodyOf: (result: ExecutionResult) => Buffer,
    private readonly ends: MemberEnds,
  ) {}

  next(result: ExecutionResult, deferred = false): void {
    // Completed by the client (or refused) already: graphql-ws would not send it either.
    if (!this.connection.subscriptions.has(this.id)) return
    this.#head ??= nextFrameHead(this.id)
    this.connection.scheduler.enqueueSemantic(new SharedFrame(this.#head, this.bodyOf(result)), undefined, deferred)
  }

  flush(): void {
    this.connection.scheduler.pump()
  }

  /** graphql-ws started the member: the gateway runs it from now on. */
  detach(member: Detachable): void {
    this.#member = member
    this.connection.subscriptions.set(this.id, DETACHED)
    ;(this.connection.members ??= new Map()).set(this.id, this)
    member.detach((error) => this.#sourceEnded(error))
  }

  /** The client completed it, or its access went (`frame`: what the client is told, if anything). */
  stop(frame?: string): void {
    if (!this.#forget()) return
    if (frame !== undefined) this.connection.scheduler.enqueueControl(frame)
    this.#member?.return().catch(() => undefined) // a member's return only leaves its cohort
  }

  /** The socket closed: nothing more is written. */
  closed(): void {
    this.#member?.return().catch(() => undefined)
  }

  /** The shared source ended (complete) or failed (error), after every result the member was owed. */
  #sourceEnded(error: GraphQLError | undefined): void {
    if (!this.#forget()) return
    this.connection.scheduler.enqueueSemantic(error ? errorFrame(this.id, this.ends.errorPayload([error])) : `{"id":${JSON.stringify(this.id)},"type":"complete"}`)
  }

  /** Takes the member out of the connection's tables; false when it was out already. */
  #forget(): boolean {
    if (this.connection.members?.get(this.id) !== this) return false
    this.connection.members.delete(this.id)
    this.connection.subscriptions.delete(this.id)
    this.ends.ended(this.connection, this.id)
    return true
  }
}

/** An operation's `error` frame as graphql-ws writes it; `payload`: the errors, shaped for the client. */
export function errorFrame(id: string, payload: unknown): string {
  return `{"id":${JSON.stringify(id)},"type":"error","payload":${JSON.stringify(payload)}}`
}

/** The operation id of a client's `complete` message, when it is one (read without parsing every message). */
export function completedId(message: string): string | undefined {
  if (!message.includes('"complete"')) return undefined
  try {
    const parsed = JSON.parse(message) as { type?: unknown; id?: unknown }
    return parsed.type === 'complete' && typeof parsed.id === 'string' ? parsed.id : undefined
  } catch {
    return undefined // graphql-ws answers malformed messages itself
  }
}
