import type { Plugin } from 'graphql-yoga'
import { getOperationAST, type ExecutionArgs, type ExecutionResult } from 'graphql'
import { tracing } from '../../observability/tracing.ts'
import type { Context } from '../../schema/context.ts'
import { isAsyncIterable } from '../../util/async-iterators.ts'

/**
 * One span per GraphQL operation, on both transports (the gateway executes through the same
 * envelop pipeline), named and attributed after OpenTelemetry's GraphQL conventions. Added only
 * when tracing is on (yoga.ts). Queries and mutations: until their result; a subscription: until
 * its stream starts (a span open for the subscription's life would be exported only at its end,
 * hours later or never), each event then traced from the agent (tracing.ts).
 *
 * Why not @envelop/opentelemetry: it records `JSON.stringify(result.errors)` on the span, and
 * graphql-js quotes a variable's invalid value in its coercion error, so message text could reach
 * the trace; it names spans and attributes outside the conventions (`query.Name`,
 * `graphql.execute.*`) and brings a second, 1.x SDK. This plugin records error codes only.
 */
export function tracingPlugin(): Plugin<Context> {
  const begin = (args: ExecutionArgs) => {
    const operation = getOperationAST(args.document, args.operationName)
    const transport = (args.contextValue as Context | undefined)?.connectionId ? 'ws' : 'http'
    return tracing.stages.operation(operation?.operation ?? 'unknown', operation?.name?.value, transport)
  }
  return {
    onExecute({ args }) {
      const span = begin(args)
      return {
        onExecuteDone({ result }) {
          span.end(isAsyncIterable(result) ? undefined : errorCodes(result))
        },
      }
    },
    onSubscribe({ args }) {
      const span = begin(args)
      return {
        onSubscribeError() {
          span.end(['INTERNAL_SERVER_ERROR'])
        },
        onSubscribeResult({ result }) {
          span.end(isAsyncIterable(result) ? undefined : errorCodes(result))
        },
      }
    },
  }
}

function errorCodes(result: ExecutionResult): string[] | undefined {
  return result.errors?.map((error) => String(error.extensions?.code ?? 'INTERNAL_SERVER_ERROR'))
}
