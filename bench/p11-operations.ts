// P11's request: the SDK's ClientTasksPage (packages/client/src/operations/queries.graphql) with an
// `orderBy` variable passed to tasks(…), as a GraphQL client that sorts its switcher sends it.
import { Kind, print, visit, type DocumentNode } from 'graphql'
import { ClientTasksPageDocument } from '../packages/client/src/generated/graphql.ts'

/** ClientTasksPage with `$orderBy: TaskOrder` passed to tasks(…): the SDK's selection, sorted. */
export const QUERY = print(
  visit(ClientTasksPageDocument as DocumentNode, {
    OperationDefinition: (node) => ({
      ...node,
      variableDefinitions: [
        ...(node.variableDefinitions ?? []),
        { kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: 'orderBy' } }, type: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: 'TaskOrder' } } },
      ],
    }),
    Field: (node) =>
      node.name.value === 'tasks'
        ? { ...node, arguments: [...(node.arguments ?? []), { kind: Kind.ARGUMENT, name: { kind: Kind.NAME, value: 'orderBy' }, value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: 'orderBy' } } }] }
        : undefined,
  }),
)

