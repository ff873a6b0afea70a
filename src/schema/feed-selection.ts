import {
  getDirectiveValues,
  getNamedType,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isAbstractType,
  isObjectType,
  Kind,
  print,
  type FieldNode,
  type FragmentSpreadNode,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type InlineFragmentNode,
  type SelectionSetNode,
} from 'graphql'

/** What of a resolve info the analysis reads (a test builds it from a parsed document). */
export type SelectionInfo = Pick<GraphQLResolveInfo, 'schema' | 'fieldNodes' | 'fragments' | 'variableValues'>

/** Response key → its field nodes, as graphql-js's execution collects them for one object type. */
type Fields = Map<string, FieldNode[]>

/**
 * Whether this workspaceEvents subscriber's TaskUpserted tells it everything its
 * TaskStatusSummaryUpdated would: the task's `id` and `statusSummary` with every field (same
 * response keys, same arguments, nested alike) its `summary` selects, and `cursor` if that one
 * selects it. Then a replay may send a renamed task as its TaskUpserted alone, the task's current
 * summary inside it (src/feed/replay-items.ts); a client applies an upsert's summary when it is
 * newer, as the SDK does. @skip and @include are evaluated with the operation's variables, as in
 * execution; anything this cannot prove covered (an abstract type inside the summary) is not.
 */
export function upsertCarriesSummary(info: SelectionInfo): boolean {
  const type = (name: string) => info.schema.getType(name)
  const upserted = type('TaskUpserted')
  const updated = type('TaskStatusSummaryUpdated')
  const task = type('Task')
  const summary = type('TaskStatusSummary')
  if (!isObjectType(upserted) || !isObjectType(updated) || !isObjectType(task) || !isObjectType(summary)) return false
  const sets = info.fieldNodes.map((node) => node.selectionSet)
  const upsert = collect(info, upserted, sets)
  const wanted = collect(info, updated, sets)
  const named = (fields: Fields, name: string) => [...fields.values()].filter((nodes) => nodes[0]!.name.value === name)
  const taskFields = named(upsert, 'task').map((nodes) => collect(info, task, nodes.map((n) => n.selectionSet)))
  return taskFields.some((fields) => {
    if (named(fields, 'id').length === 0) return false
    const carried = named(fields, 'statusSummary').map((nodes) => collect(info, summary, nodes.map((n) => n.selectionSet)))
    return carried.some((given) =>
      [...wanted].every(([key, nodes]) => {
        switch (nodes[0]!.name.value) {
          case '__typename':
          case 'workspaceId': // the subscription's own argument
          case 'taskId': // the task's id, checked above
            return true
          case 'cursor':
            return upsert.get(key)?.[0]!.name.value === 'cursor'
          case 'summary':
            return covers(info, summary, collect(info, summary, nodes.map((n) => n.selectionSet)), given)
          default:
            return false
        }
      }),
    )
  })
}

/** Whether `given` answers every field of `wanted` under the same key, alike, sub-selections included. */
function covers(info: SelectionInfo, type: GraphQLObjectType, wanted: Fields, given: Fields): boolean {
  for (const [key, nodes] of wanted) {
    const have = given.get(key)
    const node = nodes[0]!
    if (!have || have[0]!.name.value !== node.name.value || argumentsOf(have[0]!) !== argumentsOf(node)) return false
    const definition = type.getFields()[node.name.value]
    if (!definition) continue // __typename
    const inner = getNamedType(definition.type)
    if (isAbstractType(inner)) return false
    if (!isObjectType(inner)) continue
    const sub = (list: FieldNode[]) => collect(info, inner, list.map((n) => n.selectionSet))
    if (!covers(info, inner, sub(nodes), sub(have))) return false
  }
  return true
}

const argumentsOf = (node: FieldNode) =>
  (node.arguments ?? [])
    .map((a) => `${a.name.value}:${print(a.value)}`)
    .sort()
    .join(',')

function included(info: SelectionInfo, node: FieldNode | InlineFragmentNode | FragmentSpreadNode): boolean {
  if (!node.directives?.length) return true
  if (getDirectiveValues(GraphQLSkipDirective, node, info.variableValues)?.if === true) return false
  return getDirectiveValues(GraphQLIncludeDirective, node, info.variableValues)?.if !== false
}

function applies(info: SelectionInfo, type: GraphQLObjectType, condition: string | undefined): boolean {
  if (condition === undefined || condition === type.name) return true
  const abstract = info.schema.getType(condition)
  return abstract !== undefined && isAbstractType(abstract) && info.schema.isSubType(abstract, type)
}

/** The fields the selection sets ask of `type`, through fragments that apply to it. */
function collect(info: SelectionInfo, type: GraphQLObjectType, sets: readonly (SelectionSetNode | undefined)[], into: Fields = new Map(), seen = new Set<string>()): Fields {
  for (const set of sets)
    for (const selection of set?.selections ?? []) {
      if (!included(info, selection)) continue
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value
        into.set(key, [...(into.get(key) ?? []), selection])
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (applies(info, type, selection.typeCondition?.name.value)) collect(info, type, [selection.selectionSet], into, seen)
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value)
        const fragment = info.fragments[selection.name.value]
        if (fragment && applies(info, type, fragment.typeCondition.name.value)) collect(info, type, [fragment.selectionSet], into, seen)
      }
    }
  return into
}
