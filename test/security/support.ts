// Small helpers the security rows share: GraphQL over HTTP with string documents, a graphql-ws
// client that reports how its socket closed, and subscriptions that record how they ended.
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { eventually } from '../support/wait.ts'

export interface GqlError {
  message: string
  extensions?: { code?: string; [key: string]: unknown }
}
export type GqlResult<T = Record<string, unknown>> = { data?: T | null; errors?: GqlError[] }

export async function gqlHttp<T = Record<string, unknown>>(url: string, token: string | undefined, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify({ query, variables }),
  })
  return (await response.json()) as GqlResult<T>
}

export async function gqlHttpOk<T = Record<string, unknown>>(url: string, token: string, query: string, variables: Record<string, unknown> = {}) {
  const result = await gqlHttp<T>(url, token, query, variables)
  if (result.errors?.length || !result.data) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`)
  return result.data
}

export const codes = (result: { errors?: GqlError[] }) => (result.errors ?? []).map((e) => e.extensions?.code)

/** A graphql-ws client (no retries) that records its close code; resolves once acknowledged. */
export async function socket(url: string, token: string) {
  let closeCode: number | undefined
  const client = await new Promise<Client>((resolve, reject) => {
    const c = createClient({
      url,
      webSocketImpl: WebSocket,
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: () => undefined,
      connectionParams: { authorization: `Bearer ${token}` },
      on: {
        connected: () => resolve(c),
        closed: (event) => {
          closeCode = (event as { code?: number }).code
          reject(event as Error)
        },
      },
    })
  })
  return {
    client,
    get closeCode() {
      return closeCode
    },
    /** Waits (with a deadline) for the socket to close; returns the code. */
    closed: (timeoutMs = 10_000) => eventually(() => closeCode, timeoutMs),
    /** One query or mutation over this socket. */
    execute: <T = Record<string, unknown>>(query: string, variables: Record<string, unknown> = {}) =>
      new Promise<GqlResult<T>>((resolve) => {
        let result: GqlResult<T> = {}
        client.subscribe<T>(
          { query, variables },
          {
            next: (value) => (result = value as GqlResult<T>),
            error: (error) => resolve({ errors: Array.isArray(error) ? (error as GqlError[]) : [{ message: String(error), extensions: { code: 'CLOSED' } }] }),
            complete: () => resolve(result),
          },
        )
      }),
    subscribe: (query: string, variables: Record<string, unknown>) => recordedSubscription(client, query, variables),
    dispose: () => client.dispose(),
  }
}

export type RecordedSubscription = ReturnType<typeof recordedSubscription>

/** A subscription's events, and how it ended: complete, or the errors of an `error` message. */
export function recordedSubscription(client: Client, query: string, variables: Record<string, unknown>) {
  const events: GqlResult[] = []
  let ended: { completed: true } | { errors: GqlError[] } | undefined
  client.subscribe(
    { query, variables },
    {
      next: (value) => void events.push(value as GqlResult),
      error: (error) => (ended = { errors: Array.isArray(error) ? (error as GqlError[]) : [{ message: String(error) }] }),
      complete: () => (ended ??= { completed: true }),
    },
  )
  return {
    events,
    get ended() {
      return ended
    },
    /** The codes of the error that ended it, once it ended with one. */
    endedWith: (timeoutMs = 10_000) => eventually(() => (ended && 'errors' in ended ? ended.errors.map((e) => e.extensions?.code) : undefined), timeoutMs),
  }
}

export const WORKSPACE_EVENTS = `subscription ($ws: ID!) { workspaceEvents(workspaceId: $ws) { __typename ... on TaskUpserted { task { id title } } } }`
export const CREATE_TASK = `mutation ($ws: ID!, $title: String!) { createTask(input: { workspaceId: $ws, title: $title }) { id } }`
export const CREATE_USER = `mutation ($name: String!) { createUser(name: $name) { token user { id } } }`
export const CREATE_WORKSPACE = `mutation ($name: String!) { createWorkspace(name: $name) { id } }`
export const ADD_MEMBER = `mutation ($ws: ID!, $user: ID!) { addWorkspaceMember(workspaceId: $ws, userId: $user) { id } }`
export const REMOVE_MEMBER = `mutation ($ws: ID!, $user: ID!) { removeWorkspaceMember(workspaceId: $ws, userId: $user) { id members { id } } }`
export const ROTATE = `mutation ($user: ID!) { rotateUserToken(userId: $user) { token user { id active } } }`
export const DEACTIVATE = `mutation ($user: ID!) { deactivateUser(userId: $user) { id active } }`

/** A user made by the admin, with its token and id. */
export async function newUser(url: string, adminToken: string, name: string) {
  const { createUser } = await gqlHttpOk<{ createUser: { token: string; user: { id: string } } }>(url, adminToken, CREATE_USER, { name })
  return { token: createUser.token, id: createUser.user.id }
}

export async function newWorkspace(url: string, token: string, name: string) {
  return (await gqlHttpOk<{ createWorkspace: { id: string } }>(url, token, CREATE_WORKSPACE, { name })).createWorkspace.id
}

/** Waits until the subscription has received at least `count` events. */
export const eventsArrive = (sub: RecordedSubscription, count: number, timeoutMs = 10_000) => eventually(() => sub.events.length >= count, timeoutMs)
