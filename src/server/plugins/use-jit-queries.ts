import type { Plugin } from 'graphql-yoga'
import { getOperationAST, type DocumentNode, type ExecutionArgs, type GraphQLSchema } from 'graphql'
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit'

interface Compiled {
  schema: GraphQLSchema
  /** Null when graphql-jit could not compile the operation: it runs on the default executor. */
  query: CompiledQuery | null
}

/**
 * Queries run as functions graphql-jit compiles from each (document, operation) once, instead of
 * through the field-by-field executor: per field that executor builds a resolve info, a path and
 * an argument map (~1 KB), which for a 500-task page with every summary field (~14,000 fields)
 * was most of its cost and of the garbage collection it caused (bench/p4-profile.ts). Resolvers,
 * scalars, errors and their codes are the schema's own; the result is the same.
 *
 * Only queries: mutations keep the default executor (serial execution), subscriptions are not
 * touched. Compilations are kept as long as their document is (Yoga's parse cache holds documents),
 * and an operation graphql-jit cannot compile runs on the default executor.
 */
export function jitQueries(): Plugin {
  const compiled = new WeakMap<DocumentNode, Map<string | null, Compiled>>()
  function compiledFor(args: ExecutionArgs): CompiledQuery | null {
    let byOperation = compiled.get(args.document)
    if (!byOperation) compiled.set(args.document, (byOperation = new Map()))
    const name = args.operationName ?? null
    let entry = byOperation.get(name)
    if (!entry || entry.schema !== args.schema) {
      const result = compileQuery(args.schema, args.document, args.operationName ?? undefined)
      entry = { schema: args.schema, query: isCompiledQuery(result) ? result : null }
      byOperation.set(name, entry)
    }
    return entry.query
  }
  return {
    onExecute({ args, setExecuteFn }) {
      if (getOperationAST(args.document, args.operationName)?.operation !== 'query') return
      const query = compiledFor(args)
      if (query) setExecuteFn((a) => query.query(a.rootValue, a.contextValue, a.variableValues))
    },
  }
}
