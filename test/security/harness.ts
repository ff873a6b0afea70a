import type { Client } from 'graphql-ws'
import type { TestServer } from '../support/server.ts'

/** One GraphQL error as a client receives it. */
export interface ErrorShape {
  message: string
  path?: (string | number)[]
  extensions?: Record<string, unknown>
}

export interface Answer {
  /** The response or frame text as received (what a client could read). */
  text: string
  data?: Record<string, unknown> | null
  errors?: ErrorShape[]
}

export interface Operation {
  query: string
  variables?: Record<string, unknown>
  operationName?: string
}

/**
 * POST /graphql with a body written as JSON text. JSON.stringify writes a lone surrogate as the
 * escape `\ud800` (not as U+FFFD, which raw UTF-8 would force), so the server receives it as sent.
 */
export async function postOperation(server: TestServer, token: string | undefined, operation: Operation): Promise<Answer & { status: number }> {
  const body = JSON.stringify(operation)
  const response = await fetch(server.graphqlUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body,
  })
  const text = await response.text()
  return { status: response.status, text, ...(JSON.parse(text) as Omit<Answer, 'text'>) }
}

/**
 * One operation over a graphql-ws socket: its first result, or the error frame's errors. Later
 * results of a subscription are not waited for (the operation is completed after the first).
 */
export function socketOperation(client: Client, operation: Operation): Promise<Answer> {
  return new Promise((resolve) => {
    let done = false
    const dispose = client.subscribe(
      { query: operation.query, variables: operation.variables, operationName: operation.operationName },
      {
        next: (value) => {
          if (done) return
          done = true
          resolve({ text: JSON.stringify(value), ...(value as Omit<Answer, 'text'>) })
          dispose()
        },
        // graphql-ws hands an error frame's payload (the GraphQL errors) to error().
        error: (errors) => {
          if (done) return
          done = true
          resolve({ text: JSON.stringify(errors), errors: errors as ErrorShape[] })
        },
        complete: () => {
          if (!done) resolve({ text: '' })
        },
      },
    )
  })
}

/**
 * Whether `text` repeats more than `limit` consecutive characters of `sent`: some window of
 * `limit + 1` characters of the (short) text occurs in the (possibly huge) sent value.
 */
export function echoesMoreThan(text: string, sent: string, limit = 64): boolean {
  for (let i = 0; i + limit < text.length; i++) if (sent.includes(text.slice(i, i + limit + 1))) return true
  return false
}

/** A member's task with a started session (the mock agent): what the input-rule tests aim their operations at. */
export async function taskWithSession(server: TestServer, token: string, workspaceId: string, title: string): Promise<{ taskId: string; sessionId: string }> {
  const task = await postOperation(server, token, {
    query: 'mutation ($input: CreateTaskInput!) { createTask(input: $input) { id } }',
    variables: { input: { workspaceId, title } },
  })
  const taskId = (task.data!.createTask as { id: string }).id
  const session = await postOperation(server, token, {
    query: 'mutation ($input: StartSessionInput!) { startSession(input: $input) { id } }',
    variables: { input: { taskId } },
  })
  return { taskId, sessionId: (session.data!.startSession as { id: string }).id }
}
