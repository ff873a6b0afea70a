import type { GraphQLFormattedError } from 'graphql'

/**
 * Why a call failed. `code` is the server's `extensions.code` (UNAUTHENTICATED, FORBIDDEN, NOT_FOUND,
 * BAD_USER_INPUT, CONFLICT, RATE_LIMITED, UNAVAILABLE, INTERNAL_SERVER_ERROR), or one of the client's:
 * TIMEOUT (no answer after the bounded retries), UNCERTAIN (a mutation whose outcome is unknown:
 * the socket closed or it timed out after it was sent), CLOSED (the client was disposed, or the
 * server refused the token).
 */
export class TaskClientError extends Error {
  override name = 'TaskClientError'
  constructor(
    readonly code: string,
    message: string,
    readonly errors: readonly GraphQLFormattedError[] = [],
  ) {
    super(message)
  }

  static fromErrors(errors: readonly GraphQLFormattedError[]): TaskClientError {
    const first = errors[0]
    const code = typeof first?.extensions?.code === 'string' ? first.extensions.code : 'INTERNAL_SERVER_ERROR'
    return new TaskClientError(code, errors.map((e) => e.message).join('; ') || code, errors)
  }
}

export function errorCode(errors: readonly GraphQLFormattedError[]): string | undefined {
  const code = errors[0]?.extensions?.code
  return typeof code === 'string' ? code : undefined
}
