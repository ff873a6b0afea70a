import { getOperationAST, GraphQLError, type ExecutionArgs } from 'graphql'
import type { SubscribePayload } from 'graphql-ws'
import type { EnvelopedOperation, OperationPipeline, SubscriptionContext, WebSocketOperationContext } from './operation-pipeline.ts'
import { DeliveryTags } from '../outbound/delivery-tags.ts'
import { authorizeCaller } from './gateway-auth.ts'
import type { CohortStart, GatewayCohorts } from './gateway-cohorts.ts'
import type { Connection } from './gateway-connection.ts'

/** What onSubscribe hands to execute/subscribe: the operation's envelop pipeline and its cohort, if any. */
interface OperationRoot {
  enveloped: EnvelopedOperation
  cohort?: CohortStart
}

/**
 * The operation's pipeline and cohort, once: graphql-ws keeps the execution arguments for as long
 * as a subscription lives, and neither is needed after the start (the pipeline's closures and the
 * cohort key, a copy of the whole document, would otherwise stay with every idle subscription).
 */
export function takeRoot(args: ExecutionArgs): OperationRoot {
  const root = args.rootValue as OperationRoot
  args.rootValue = undefined
  return root
}

/**
 * onSubscribe: parses and validates a subscribe message through Yoga's pipeline, authorizes its
 * caller, builds its context and, for a subscription, takes its place in the connection's
 * routing table (within the per-connection cap) and its cohort. Errors answer the operation alone.
 */
export async function startOperation(
  gateway: { yoga: OperationPipeline; cohorts: GatewayCohorts; maxSubscriptionsPerConnection: number },
  connection: Connection,
  id: string,
  payload: SubscribePayload,
): Promise<ExecutionArgs | readonly GraphQLError[]> {
  const since = connection.access.generation
  const scopes: string[] = []
  // The caller is set once the operation is known to be allowed (below).
  const websocket: WebSocketOperationContext = { principal: null, connection: connection.memberships, onWorkspaceScope: (workspaceId) => scopes.push(workspaceId) }
  // Only what the context factory reads: the context lives as long as a subscription does.
  const enveloped = gateway.yoga.getEnveloped({ params: payload, websocket })
  let document
  try {
    document = enveloped.parse(payload.query)
  } catch (error) {
    // A throw here would close the whole socket (4500); a syntax error is the operation's own failure.
    if (error instanceof GraphQLError)
      return [new GraphQLError(error.message, { extensions: { code: 'BAD_USER_INPUT', ...error.extensions } })]
    throw error
  }
  const errors = enveloped.validate(enveloped.schema, document)
  if (errors.length > 0) return errors
  const operation = getOperationAST(document, payload.operationName)
  const refused = await authorizeCaller(connection, websocket)
  if (refused) return refused
  const contextValue = (await enveloped.contextFactory()) as SubscriptionContext
  let cohort: CohortStart | undefined
  if (operation?.operation === 'subscription') {
    // Checked and taken without an await in between, so concurrent subscribe messages cannot overshoot.
    // BAD_USER_INPUT like every fixed limit: waiting does not help, completing a subscription does.
    const cap = gateway.maxSubscriptionsPerConnection
    if (connection.subscriptions.size >= cap)
      return [new GraphQLError(`At most ${cap} subscriptions per connection; complete one first.`, { extensions: { code: 'BAD_USER_INPUT', limit: 'maxSubscriptionsPerConnection' } })]
    const tags = new DeliveryTags()
    contextValue.deliveryTags = tags
    connection.subscriptions.set(id, tags)
    connection.access.subscribing(id, scopes, since)
    cohort = gateway.cohorts.planFor(operation, document, payload, connection, id)
  } else connection.access.answering(id)
  const rootValue: OperationRoot = { enveloped, cohort }
  const args: ExecutionArgs = {
    schema: enveloped.schema,
    operationName: payload.operationName,
    document,
    variableValues: payload.variables,
    contextValue,
    rootValue,
  }
  if (cohort) gateway.cohorts.starting(args, cohort)
  return args
}
