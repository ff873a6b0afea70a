import { print, type FormattedExecutionResult } from 'graphql'
import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'

export interface GraphQLErrorShape {
  message: string
  path?: (string | number)[]
  extensions?: { code?: string; [key: string]: unknown }
}

export type Result<T> = { data?: T | null; errors?: GraphQLErrorShape[] }

/** GraphQL over HTTP with a bearer token (or none). */
export async function http<TResult, TVariables>(
  url: string,
  token: string | undefined,
  document: TypedDocumentNode<TResult, TVariables>,
  ...[variables]: TVariables extends Record<string, never> ? [] : [TVariables]
): Promise<Result<TResult>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify({ query: print(document), variables }),
  })
  return (await response.json()) as Result<TResult>
}

/** Unwraps data, failing with the errors when there are any. */
export async function ok<TResult, TVariables>(
  url: string,
  token: string | undefined,
  document: TypedDocumentNode<TResult, TVariables>,
  ...rest: TVariables extends Record<string, never> ? [] : [TVariables]
): Promise<TResult> {
  const result = await http(url, token, document, ...rest)
  if (result.errors?.length || !result.data) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`)
  return result.data
}

export function errorCodes(result: { errors?: GraphQLErrorShape[] }): (string | undefined)[] {
  return (result.errors ?? []).map((e) => e.extensions?.code)
}

/** A real graphql-ws client; resolves once the server acknowledged (or rejects with the close event). */
export async function wsClient(url: string, token: string | undefined): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client = createClient({
      url,
      webSocketImpl: WebSocket,
      lazy: false,
      retryAttempts: 0,
      // A refused connection is reported through the rejected promise below, not console.error.
      onNonLazyError: () => undefined,
      connectionParams: token ? { authorization: `Bearer ${token}` } : {},
      on: {
        connected: () => resolve(client),
        closed: (event) => reject(event),
      },
    })
  })
}

/** One operation over the socket, returning its single result. */
export function wsExecute<TResult, TVariables>(
  client: Client,
  document: TypedDocumentNode<TResult, TVariables>,
  variables?: TVariables,
): Promise<FormattedExecutionResult<TResult, unknown>> {
  const iterator = client.iterate<TResult>({ query: print(document), variables: variables as Record<string, unknown> })
  return iterator.next().then(async (r) => {
    await iterator.return?.()
    return r.value as FormattedExecutionResult<TResult, unknown>
  })
}

/** A subscription whose events are collected; `next(n)` waits until n events have arrived. */
export function wsSubscribe<TResult, TVariables>(
  client: Client,
  document: TypedDocumentNode<TResult, TVariables>,
  variables: TVariables,
) {
  const events: FormattedExecutionResult<TResult, unknown>[] = []
  let waiters: (() => void)[] = []
  let completed = false
  let failure: unknown
  const notify = () => {
    const current = waiters
    waiters = []
    for (const w of current) w()
  }
  const dispose = client.subscribe<TResult>(
    { query: print(document), variables: variables as Record<string, unknown> },
    {
      next: (value) => {
        events.push(value)
        notify()
      },
      error: (error) => {
        failure = error
        notify()
      },
      complete: () => {
        completed = true
        notify()
      },
    },
  )
  return {
    events,
    get completed() {
      return completed
    },
    get failure() {
      return failure
    },
    /** Resolves once `count` events have been received (or the subscription ended). */
    async waitFor(count: number): Promise<FormattedExecutionResult<TResult, unknown>[]> {
      while (events.length < count && !completed && failure === undefined)
        await new Promise<void>((resolve) => waiters.push(resolve))
      return events
    },
    dispose,
  }
}
