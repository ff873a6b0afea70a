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
export const notFound = (what: string, id: string) => clientError('NOT_FOUND', `${what} ${id} does not exist.`, { id })
export const badInput = (message: string, field?: string) =>
  clientError('BAD_USER_INPUT', message, field ? { field } : {})
