// The client SDK's own operations (packages/client/src/operations/*.graphql, generated into
// packages/client/src/generated/graphql.ts), sent the way the SDK sends them, so a bench row measures what
// the SDK and the page (src/web, which talks only through the SDK) actually send: the same
// document text, operation name and variables. Queries and mutations go over the client's
// graphql-ws socket as the SDK's transport does (one `subscribe` answered by `next` + `complete`),
// or over HTTP where the socket is not what is measured (seeding, triggers).
import { print, type DocumentNode } from 'graphql'
import type { Client } from 'graphql-ws'
import { BOOT_PAGE_SIZE } from '../packages/client/src/task-client.ts'
import { httpGql } from './support.ts'

export {
  ClientAddMessageDocument,
  ClientBootDocument,
  ClientSessionEventsDocument,
  ClientStartSessionDocument,
  ClientTasksPageDocument,
  ClientWorkspaceEventsDocument,
} from '../packages/client/src/generated/graphql.ts'
export { BOOT_PAGE_SIZE }

/** A generated typed document: its result and variables types ride along. */
export type Doc<TResult, TVariables> = DocumentNode & { __apiType?: (variables: TVariables) => TResult }

/** The operation's name, as the row labels and the SDK's payloads carry it. */
export function operationName(document: DocumentNode): string {
  const operation = document.definitions.find((d) => d.kind === 'OperationDefinition')
  const name = operation?.kind === 'OperationDefinition' ? operation.name?.value : undefined
  if (!name) throw new Error('an SDK document without an operation name')
  return name
}

const printed = new WeakMap<DocumentNode, { query: string; operationName: string }>()

/** The payload the SDK's transport sends for `document` (packages/client/src/transport.ts payloadOf). */
export function sdkPayload<TResult, TVariables>(document: Doc<TResult, TVariables>, variables: TVariables) {
  let entry = printed.get(document)
  if (!entry) printed.set(document, (entry = { query: print(document), operationName: operationName(document) }))
  return { ...entry, variables: variables as Record<string, unknown> }
}

/** Subscribes `document` on a graphql-ws client with the SDK's payload. */
export function sdkSubscribe<TResult, TVariables>(
  client: Client,
  document: Doc<TResult, TVariables>,
  variables: TVariables,
  onNext: (data: TResult | null | undefined) => void = () => undefined,
  onError: (error: unknown) => void = () => undefined,
): () => void {
  return client.subscribe<TResult>(sdkPayload(document, variables), { next: (r) => onNext(r.data), error: onError, complete: () => undefined })
}

/** One query or mutation over the client's socket, as the SDK's transport sends it; errors throw. */
export function sdkExecute<TResult, TVariables>(client: Client, document: Doc<TResult, TVariables>, variables: TVariables): Promise<TResult> {
  return new Promise<TResult>((resolve, reject) => {
    let settled = false
    client.subscribe<TResult>(sdkPayload(document, variables), {
      next: (result) => {
        settled = true
        if (result.errors?.length || result.data == null) reject(new Error(`${operationName(document)}: ${JSON.stringify(result.errors)}`))
        else resolve(result.data)
      },
      error: (error) => {
        settled = true
        reject(error instanceof Error ? error : new Error(`${operationName(document)}: ${JSON.stringify(error)}`))
      },
      complete: () => {
        if (!settled) reject(new Error(`${operationName(document)}: completed without a result`))
      },
    })
  })
}

/** The SDK's document over HTTP (setup and triggers, where the socket is not what is measured). */
export async function sdkHttp<TResult, TVariables>(url: string, token: string, document: Doc<TResult, TVariables>, variables: TVariables): Promise<TResult> {
  const { query, variables: vars } = sdkPayload(document, variables)
  return (await httpGql<TResult>(url, token, query, vars)).data
}
