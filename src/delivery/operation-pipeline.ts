import type { DocumentNode, ExecutionArgs, ExecutionResult, GraphQLError, GraphQLSchema } from 'graphql'
import type { SubscribePayload } from 'graphql-ws'
import type { Principal } from '../store/users.ts'
import type { ConnectionScope } from '../session-stream/connection-scope.ts'
import type { DeliveryTags } from '../outbound/delivery-tags.ts'

/**
 * What the gateway needs of the GraphQL server, declared here so the gateway imports nothing
 * above it: Yoga (server/yoga.ts) satisfies it. One pipeline per operation, as envelop builds it.
 */
export interface OperationPipeline {
  readonly graphqlEndpoint: string
  getEnveloped(initial: { params: SubscribePayload; websocket: WebSocketOperationContext }): EnvelopedOperation
}

export interface EnvelopedOperation {
  schema: GraphQLSchema
  parse(source: string): DocumentNode
  validate(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[]
  contextFactory(): unknown
  execute(args: ExecutionArgs): Promise<Results> | Results
  subscribe(args: ExecutionArgs): Promise<Results> | Results
}

/** What an operation arriving on a socket hands the context factory. */
export interface WebSocketOperationContext {
  principal: Principal | null
  connection: ConnectionScope
  onWorkspaceScope: (workspaceId: string) => void
}

/** The one field of an operation's context the gateway writes: the subscription's delivery tags. */
export interface SubscriptionContext {
  deliveryTags?: DeliveryTags
}

export type Results = AsyncIterableIterator<ExecutionResult> | ExecutionResult
