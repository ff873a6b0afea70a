import type { ExecutionResult, GraphQLSchema, DocumentNode } from 'graphql'
import type { Plugin } from 'graphql-yoga'

export interface OperationArgs {
  schema: GraphQLSchema
  document: DocumentNode
  variableValues?: Record<string, unknown> | null
}

/**
 * A plugin that checks each operation once its variables are known, the same way whether it is
 * executed or subscribed, and answers `refusal`'s result instead of running it (before any resolver).
 */
export function refuseBeforeRunning(refusal: (args: OperationArgs) => ExecutionResult | undefined): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const refused = refusal(args)
      if (refused) setResultAndStopExecution(refused)
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const refused = refusal(args)
      if (refused) setResultAndStopExecution(refused)
    },
  }
}
