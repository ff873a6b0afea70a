import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql'
import { builder } from './builder.ts'
// Each domain registers its types on the builder when imported.
import './types/workspace.ts'
import './types/user.ts'
import './types/task.ts'
import './types/workflow.ts'
import './types/boot.ts'
import './types/session.ts'
import './types/session-mutations.ts'
import './types/agent-profile.ts'
import './types/git.ts'
import './types/pull-request.ts'
import './types/summary.ts'
import './types/workspace-events.ts'
import './types/session-events.ts'
import './types/agent-detail.ts'

let schema: GraphQLSchema | undefined

export function getSchema(): GraphQLSchema {
  schema ??= builder.toSchema()
  return schema
}

/** The committed schema.graphql: sorted, so the file diffs cleanly whatever the registration order. */
export function printedSchema(): string {
  return printSchema(lexicographicSortSchema(getSchema())) + '\n'
}
