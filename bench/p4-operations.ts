// P4's operations: the SDK's own list documents (packages/client/src/operations/queries.graphql), as the
// task switcher sends them, and the same documents with the statusSummary selection removed.
import { Kind, print, visit, type DocumentNode } from 'graphql'
import { ClientBootDocument, ClientTasksPageDocument } from '../packages/client/src/generated/graphql.ts'

/** The same operation without `statusSummary { ...StatusSummaryFields }` (and the fragment it alone used). */
export function withoutSummary(document: DocumentNode): DocumentNode {
  return visit(document, {
    Field: (node) => (node.name.value === 'statusSummary' ? null : undefined),
    FragmentDefinition: (node) => (node.typeCondition.name.value === 'TaskStatusSummary' ? null : undefined),
  })
}

function operationName(document: DocumentNode): string {
  const operation = document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION)
  return operation?.name?.value ?? '(anonymous)'
}

export interface ListOperation {
  /** The SDK's operation name. */
  name: string
  withSummary: string
  withoutSummary: string
}

const operation = (document: DocumentNode): ListOperation => ({
  name: operationName(document),
  withSummary: print(document),
  withoutSummary: print(withoutSummary(document)),
})

export const OPERATIONS = {
  /** A following page of the switcher (after: null: the first one, as boot reads it). */
  tasks: operation(ClientTasksPageDocument as DocumentNode),
  /** The switcher's first paint. */
  boot: operation(ClientBootDocument as DocumentNode),
}
