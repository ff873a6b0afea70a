import type { Plugin } from 'graphql-yoga'
import { getOperationAST, type GraphQLSchema } from 'graphql'
import { subscriptionField, subscriptionMetrics, type Transport } from '../../observability/graphql-metrics.ts'
import type { Metrics } from '../../observability/metrics.ts'
import type { Context } from '../../schema/context.ts'
import { isAsyncIterable, onIteratorEnd } from '../../util/async-iterators.ts'

const UNKNOWN = 'unknown'

/**
 * Latency of queries and mutations on both transports (the gateway executes through the same
 * envelop pipeline), and subscriptions served over HTTP event streams. WebSocket subscriptions are
 * measured by the gateway: cohorts share one execution among subscribers, so only it sees each one.
 * Errors are counted where responses are formed (use-error-codes.ts and the gateway), not here.
 */
export function graphqlMetricsPlugin(metrics: Metrics, schema: GraphQLSchema): Plugin<Context> {
  const subscriptions = subscriptionMetrics(metrics, schema)
  return {
    onExecute({ args }) {
      const started = performance.now()
      const operation = getOperationAST(args.document, args.operationName)?.operation ?? UNKNOWN
      const transport: Transport = args.contextValue.connectionId ? 'ws' : 'http'
      return {
        onExecuteDone() {
          metrics.requestDuration.observe({ transport, operation }, (performance.now() - started) / 1000)
        },
      }
    },
    onSubscribe({ args }) {
      if (args.contextValue.connectionId) return
      return {
        onSubscribeResult({ result, setResult }) {
          if (!isAsyncIterable(result)) return
          const end = subscriptions.begin('http', subscriptionField(args.schema, args.document, args.operationName))
          setResult(onIteratorEnd(result, end))
        },
      }
    },
  }
}
