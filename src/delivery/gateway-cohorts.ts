import { Kind, type DocumentNode, type ExecutionArgs, type ExecutionResult, type OperationDefinitionNode } from 'graphql'
import type { SubscribePayload } from 'graphql-ws'
import type { ErrorCode } from '../errors.ts'
import type { Logger } from '../observability/logger.ts'
import { socketResult } from '../contract/client-errors.ts'
import { Cohorts } from './cohorts.ts'
import { feedCohortPlan, joinFeedCohort, MULTIPLEXABLE_FIELDS, type FeedCohortPlan } from './feed-cohort-plan.ts'
import { nextFrameBody } from '../outbound/shared-frame.ts'
import { MemberSink, STAND_IN, type Detachable, type MemberEnds } from './detached-members.ts'
import type { Results } from './operation-pipeline.ts'
import type { Connection } from './gateway-connection.ts'

/** The cohort a subscription joins, and where its results go. */
export type CohortStart = FeedCohortPlan & { sink: MemberSink }

/**
 * The gateway's side of subscription cohorts (cohorts.ts): which subscriptions join one, the
 * shared results written to each member as bytes, and what a started member lets go of.
 */
export class GatewayCohorts {
  readonly cohorts: Cohorts
  /** Cohort members not yet started, by their execution arguments (started() detaches them). */
  readonly #unstarted = new WeakMap<ExecutionArgs, MemberSink>()
  readonly #payloads = new WeakMap<ExecutionResult, Buffer>()

  constructor(
    logger: Logger,
    private readonly countError: (code: ErrorCode) => void,
    /** Share one execution per event among subscribers of the same feed operation. */
    private readonly multiplex: boolean,
    private readonly ends: MemberEnds,
  ) {
    this.cohorts = new Cohorts(logger)
  }

  /**
   * The cohort of a subscription whose one root field is multiplexable. Keyed without the resume
   * cursor: a resumed member replays for itself, then shares the live execution.
   */
  planFor(operation: OperationDefinitionNode, document: DocumentNode, payload: SubscribePayload, connection: Connection, id: string): CohortStart | undefined {
    const fields = operation.selectionSet.selections
    const field = fields.length === 1 && fields[0]!.kind === Kind.FIELD ? fields[0]! : undefined
    if (!this.multiplex || !field || !MULTIPLEXABLE_FIELDS.has(field.name.value)) return undefined
    return {
      ...feedCohortPlan(field, document, payload.query, payload.operationName, payload.variables),
      sink: new MemberSink(connection, id, this.#payloadOf, this.ends),
    }
  }

  /** The member's execution arguments, kept until it starts. */
  starting(args: ExecutionArgs, cohort: CohortStart): void {
    this.#unstarted.set(args, cohort.sink)
  }

  subscribe(cohort: CohortStart, args: ExecutionArgs, subscribe: (args: ExecutionArgs) => Promise<Results>): Promise<Results> {
    return joinFeedCohort(this.cohorts, cohort, cohort.sink, args, subscribe)
  }

  /**
   * A cohort member started: from now on the gateway runs it (detached-members.ts), and graphql-ws
   * gets a stand-in that ends at once, so it lets go of the operation (the subscribe message, the
   * execution arguments with their context, its loop awaiting results). Undefined for any other
   * operation, or for a member its client completed before it started (graphql-ws returns it).
   */
  started(args: ExecutionArgs, result: unknown, stillSubscribed: boolean): AsyncIterableIterator<ExecutionResult> | undefined {
    const sink = this.#unstarted.get(args)
    if (!sink) return undefined
    this.#unstarted.delete(args)
    args.contextValue = undefined
    if (!stillSubscribed || !isDetachable(result)) return undefined
    sink.detach(result)
    return STAND_IN
  }

  /**
   * Each cohort result's frame body as graphql-ws would write it (onNext's error shaping
   * included), serialized and encoded once for all members.
   */
  readonly #payloadOf = (result: ExecutionResult): Buffer => {
    let bytes = this.#payloads.get(result)
    if (bytes === undefined) {
      const { errors: _errors, ...data } = result
      // Errors, if any, are counted once per event here rather than once per member.
      bytes = nextFrameBody(JSON.stringify(socketResult(result, this.countError) ?? data))
      this.#payloads.set(result, bytes)
    }
    return bytes
  }
}

const isDetachable = (result: unknown): result is Detachable => typeof (result as Partial<Detachable> | null)?.detach === 'function'
