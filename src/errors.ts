import { GraphQLError } from 'graphql'

export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'INTERNAL_SERVER_ERROR'
  | 'UNAVAILABLE'

export function clientError(code: ErrorCode, message: string, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extra } })
}

export const unauthenticated = () => clientError('UNAUTHENTICATED', 'A valid bearer token is required.')
export const forbidden = (what = 'this resource') => clientError('FORBIDDEN', `You may not access ${what}.`)
/** The most characters of one client-sent value an error message or extension may repeat (MAPPING.md v1.3). */
export const MAX_ECHOED_CHARACTERS = 64

/**
 * A client-sent value as an error may quote it: whole up to 64 characters, else its first 64 and
 * "…". Messages and stored errors (a launch error naming a 1 MB profile name) would otherwise carry
 * whatever was sent back to every reader. A surrogate pair cut in half is dropped rather than left lone.
 */
export function echoed(value: string): string {
  if (value.length <= MAX_ECHOED_CHARACTERS) return value
  const head = value.slice(0, MAX_ECHOED_CHARACTERS)
  return `${/[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head}…`
}

export const notFound = (what: string, id: string) => clientError('NOT_FOUND', `${what} ${echoed(id)} does not exist.`, { id: echoed(id) })
export const badInput = (message: string, field?: string) =>
  clientError('BAD_USER_INPUT', message, field ? { field } : {})
