import {
  GraphQLError,
  Kind,
  type ASTNode,
  type FieldNode,
  type OperationDefinitionNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql'

/**
 * How many levels of one `ofType` chain the depth count leaves out: graphql-js's default
 * `typeDepth` of getIntrospectionQuery(), the query GraphiQL and graphql-codegen send. Those levels
 * unwrap the List/NonNull wrappers of a single type reference (this schema's deepest is `[X!]!`,
 * 3 levels; past it every `ofType` is null), so they nest no data; a longer chain counts from
 * its 10th level on, and a depth-50 introspection document is refused like any other.
 */
export const FREE_OF_TYPE_LEVELS = 9

const INTROSPECTION_ROOTS = new Set(['__schema', '__type'])

type Position = { introspection: boolean; ofTypeRun: number }

/**
 * graphql-armor's max-depth count (a fragment spread adds two levels, an inline fragment one,
 * with `ignoreIntrospection: false`), except for the free `ofType` levels above. armor caches a
 * fragment's depth by name alone; here it depends on where the spread sits in an `ofType` chain,
 * so the cache is keyed by that too, which keeps the count linear in the document however the
 * fragments are arranged.
 */
export function countDepth(context: Pick<ValidationContext, 'getFragment'>, operation: OperationDefinitionNode): number {
  const fragmentDepths = new Map<string, number>()

  const count = (node: ASTNode, parentDepth: number, at: Position): number => {
    let depth = parentDepth
    if ('selectionSet' in node && node.selectionSet) {
      for (const child of node.selectionSet.selections) {
        let next = at
        let childDepth = parentDepth + 1
        if (child.kind === Kind.FIELD) {
          next = childPosition(child, at)
          if (next.introspection && next.ofTypeRun > 0 && next.ofTypeRun <= FREE_OF_TYPE_LEVELS) childDepth = parentDepth
        }
        depth = Math.max(depth, count(child, childDepth, next))
      }
    } else if (node.kind === Kind.FRAGMENT_SPREAD) {
      const spreadDepth = parentDepth + 1
      const key = `${node.name.value}\u0000${at.introspection}\u0000${at.ofTypeRun}`
      const known = fragmentDepths.get(key)
      // -1 marks a fragment being counted: a cycle (refused by NoFragmentCyclesRule) adds nothing more.
      if (known !== undefined) return spreadDepth + Math.max(known, 0)
      fragmentDepths.set(key, -1)
      const fragment = context.getFragment(node.name.value)
      if (fragment) {
        const fragmentDepth = count(fragment, 0, at)
        depth = Math.max(depth, spreadDepth + fragmentDepth)
        fragmentDepths.set(key, fragmentDepth)
      }
    }
    return depth
  }

  return count(operation, 0, { introspection: false, ofTypeRun: 0 })
}

/** Below `__schema`/`__type` every field belongs to an introspection type, so `ofType` there is `__Type.ofType`. */
function childPosition(field: FieldNode, at: Position): Position {
  const introspection = at.introspection || INTROSPECTION_ROOTS.has(field.name.value)
  return { introspection, ofTypeRun: introspection && field.name.value === 'ofType' ? at.ofTypeRun + 1 : 0 }
}

/** A validation rule reporting an operation deeper than `maxDepth`; armor's wording, so clients see one message for the limit. */
export function queryDepthRule(maxDepth: number, report: (context: ValidationContext, error: GraphQLError) => void): ValidationRule {
  return (context) => ({
    OperationDefinition(operation) {
      const depth = countDepth(context, operation)
      if (depth > maxDepth) report(context, new GraphQLError(`Query depth limit of ${maxDepth} exceeded, found ${depth}.`))
    },
  })
}
