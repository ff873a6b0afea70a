// P11's request: the SDK's ClientTasksPage (packages/client/src/operations/queries.graphql) as it
// is, since it declares `$orderBy: TaskOrder` and passes it to tasks(…) itself: what a client that
// sorts its switcher sends. The bench used to add the variable to the document, and broke (a
// duplicate `$orderBy`) when the SDK gained it; it now sends the SDK's text and only checks that
// the variable it sets is still there, so a change to the SDK fails here with a clear message.
import { print, type DocumentNode } from 'graphql'
import { ClientTasksPageDocument } from '../packages/client/src/generated/graphql.ts'

function declares(document: DocumentNode, variable: string): boolean {
  return document.definitions.some((d) => d.kind === 'OperationDefinition' && d.variableDefinitions?.some((v) => v.variable.name.value === variable))
}

if (!declares(ClientTasksPageDocument as DocumentNode, 'orderBy')) throw new Error("P11: the SDK's ClientTasksPage no longer declares $orderBy; P11 measures its orders through it")

/** The SDK's ClientTasksPage, sent with `orderBy` among its variables. */
export const QUERY = print(ClientTasksPageDocument as DocumentNode)
