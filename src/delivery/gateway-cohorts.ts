import { Kind, type DocumentNode, type ExecutionArgs, type ExecutionResult, type OperationDefinitionNode } from 'graphql'
import type { SubscribePayload } from 'graphql-ws'
import type { ErrorCode } from '../errors.ts'
import type { Logger } from '../observability/logger.ts'
import { socketResult } from '../contract/client-errors.ts'
import { Cohorts, feedCohortPlan, joinFeedCohort, MULTIPLEXABLE_FIELDS, type CohortSink, type FeedCohortPlan } from './cohorts.ts'
import { DeliveryTags } from '../outbound/delivery-tags.ts'
import type { Connection } from './gateway-connection.ts'

type Results = AsyncIterableIterator<ExecutionResult> | ExecutionResult

/** The cohort a subscription joins, and where its results go. */
export type CohortStart = FeedCohortPlan & { sink: CohortSink }

/** What the routing table keeps for every cohort member once started: its frames carry no delivery tag. */
const COHORT_MEMBER = new DeliveryTags()
const FRAME_END = Buffer.from('}')

/**
 * The gateway's side of subscription cohorts (cohorts.ts): which subscriptions join one, the
 * shared results written to each member as bytes, and what a started member lets go of.
 */
export class GatewayCohorts {
  readonly cohorts: Cohorts
  /** Execution arguments of cohort members not yet started (started() lets go of their contexts). */
  readonly #unstarted = new WeakSet<ExecutionArgs>()
  readonly #payloads = new WeakMap<ExecutionResult, Buffer>()

  constructor(
    logger: Logger,
    private readonly countError: (code: ErrorCode) => void,
    /** Share one execution per event among subscribers of the same feed operation. */
    private readonly multiplex: boolean,
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
      sink: new CohortMember(connection, id, this.#payloadOf),
    }
  }

  /** The member's execution arguments, kept until it starts. */
  starting(args: ExecutionArgs, payload: SubscribePayload): void {
    this.#unstarted.add(args)
    // graphql-ws keeps the subscribe message for the subscription's life; its query text (1.3 KB
    // for the SDK's feed operation) is parsed, and cached by text, already.
    ;(payload as { query: string }).query = ''
  }

  subscribe(cohort: CohortStart, args: ExecutionArgs, subscribe: (args: ExecutionArgs) => Promise<Results>): Promise<Results> {
    return joinFeedCohort(this.cohorts, cohort, cohort.sink, args, subscribe)
  }

  /**
   * A cohort member's results come from the shared execution, never from its own context:
   * neither graphql-ws (which keeps the execution arguments for the subscription's life) nor the
   * routing table needs it once started; an idle member then holds a few hundred bytes.
   */
  started(connection: Connection, id: string, args: ExecutionArgs): void {
    if (!this.#unstarted.has(args)) return
    this.#unstarted.delete(args)
    if (connection.subscriptions.has(id)) connection.subscriptions.set(id, COHORT_MEMBER)
    args.contextValue = undefined
  }

  /**
   * Each cohort result's payload as graphql-ws would write it (onNext's error shaping included),
   * serialized and encoded once for all members.
   */
  readonly #payloadOf = (result: ExecutionResult): Buffer => {
    let bytes = this.#payloads.get(result)
    if (bytes === undefined) {
      const { errors: _errors, ...data } = result
      // Errors, if any, are counted once per event here rather than once per member.
      bytes = Buffer.from(JSON.stringify(socketResult(result, this.countError) ?? data))
      this.#payloads.set(result, bytes)
    }
    return bytes
  }
}

/**
 * A cohort member's results, written as the same `next` frames graphql-ws writes, straight to
 * its scheduler: its own head (its operation id) around the payload bytes every member shares,
 * so a delivery copies bytes instead of building and encoding a string.
 */
class CohortMember implements CohortSink {
  #head: Buffer | undefined

  constructor(
    private readonly connection: Connection,
    private readonly id: string,
    private readonly payloadOf: (result: ExecutionResult) => Buffer,
  ) {}

  next(result: ExecutionResult): void {
    // Completed by the client (or refused) already: graphql-ws would not send it either.
    if (!this.connection.subscriptions.has(this.id)) return
    this.#head ??= Buffer.from(`{"id":${JSON.stringify(this.id)},"type":"next","payload":`)
    this.connection.scheduler.enqueueSemantic(Buffer.concat([this.#head, this.payloadOf(result), FRAME_END]))
  }
}
