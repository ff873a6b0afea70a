import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql'

/**
 * Whether the field being resolved selects `path` below it (field names, through fragment spreads
 * and inline fragments): lets a list read what its items' fields will ask for in its own
 * statement. @skip/@include are not evaluated: a skipped selection counts as selected, which only
 * reads more than the response needs.
 */
export function selectsPath(info: GraphQLResolveInfo, path: readonly string[]): boolean {
  return info.fieldNodes.some((node) => selects(info, node.selectionSet, path, 0))
}

function selects(info: GraphQLResolveInfo, set: SelectionSetNode | undefined, path: readonly string[], depth: number): boolean {
  if (!set) return false
  return set.selections.some((selection) => {
    if (selection.kind === Kind.FIELD)
      return selection.name.value === path[depth] && (depth === path.length - 1 || selects(info, selection.selectionSet, path, depth + 1))
    if (selection.kind === Kind.INLINE_FRAGMENT) return selects(info, selection.selectionSet, path, depth)
    return selects(info, info.fragments[selection.name.value]?.selectionSet, path, depth)
  })
}
