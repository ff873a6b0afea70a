/**
 * The shape every GraphQL error leaves the server in, over either transport: contract codes only,
 * no echoed request values, no internals. Both Yoga (HTTP, server/plugins/use-error-codes.ts) and
 * the WebSocket gateway (delivery/) apply it, so it sits below both.
 */
import { GraphQLError, Kind, print, type ExecutionResult, type GraphQLFormattedError } from 'graphql'
import { maskError as yogaMaskError } from 'graphql-yoga'
import { echoed, MAX_ECHOED_CHARACTERS, type ErrorCode } from '../errors.ts'
import { isDatabaseRefusingWrites, isDatabaseSaturated, isDatabaseUnreachable } from '../store/db.ts'

/** The codes the contract (schema.graphql head comment) lets a client meet; nothing else is ever sent. */
export const CONTRACT_ERROR_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'BAD_USER_INPUT',
  'CONFLICT',
  'RATE_LIMITED',
  'INTERNAL_SERVER_ERROR',
  'UNAVAILABLE',
])

/** What graphql-js, Yoga and the gateway call errors in the request itself: all BAD_USER_INPUT to a client. */
const REQUEST_ERROR_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
])

export const UNEXPECTED_ERROR_MESSAGE = 'Unexpected error.'
export const DATABASE_BUSY_MESSAGE = 'The database is too busy to serve this request now; retry shortly.'
export const DATABASE_UNREACHABLE_MESSAGE = 'The database cannot be reached now; retry shortly.'
export const DATABASE_WRITES_REFUSED_MESSAGE = 'The database takes no writes now (its file is locked or its disk is full); retry shortly.'
/** Over HTTP an UNAVAILABLE answer is a 503 with this Retry-After (seconds); toClientError drops it over WebSocket. */
export const UNAVAILABLE_HTTP = { status: 503, headers: { 'Retry-After': '1' } } as const

export type ErrorTransport = 'http' | 'ws'

/** Counts one error by its (contract) code, where the response carrying it is formed. */
export type ErrorCounter = (code: ErrorCode) => void

const NAME = '[_A-Za-z][_0-9A-Za-z]*'
// Reasons graphql-js gives for a bad variable that name only schema types and input fields, never the value.
const VALUE_FREE_VARIABLE_REASON = [
  `Field "${NAME}" of required type "[^"]+" was not provided\\.`,
  `Expected type "[^"]+" to be an object\\.`,
  `Field "${NAME}" is not defined by type "[^"]+"\\.(?: Did you mean [" ,_0-9A-Za-z]+\\?)?`,
].join('|')
const VARIABLE_INVALID = new RegExp(`^Variable "\\$(${NAME})" got invalid value `)
const VARIABLE_PATH_AND_REASON = new RegExp(`(?: at "(${NAME}(?:\\.${NAME}|\\[\\d+\\])*)")?; (${VALUE_FREE_VARIABLE_REASON})$`)
/** getTokenDesc: the token's own text follows its kind. */
const SYNTAX_TOKEN_VALUE = /^(Syntax Error: [\s\S]*?\b(?:Name|Int|Float|String|BlockString)) "[\s\S]*"\.$/
const SYNTAX_ESCAPE = /^(Syntax Error: Invalid (?:Unicode|character) escape sequence): [\s\S]*$/
/** ValuesOfCorrectTypeRule prints the offending literal after "found". */
const LITERAL_FOUND = /^(Expected value of type "[^"]*"), found [\s\S]*$/
const ARGUMENT_INVALID = new RegExp(`^(Argument "${NAME}" has invalid value) [\\s\\S]*$`)
/** graphql-js scalars end their own parse error with the value, and ValuesOfCorrectTypeRule reports it as is. */
const SCALAR_CANNOT_REPRESENT = /^((?:String|Int|Float|Boolean|ID|Enum "[^"]*") cannot represent [^:]*value): [\s\S]*$/
const ENUM_VALUE_UNKNOWN = new RegExp(`^Value "[\\s\\S]*" does not exist in ("${NAME}") enum\\.[\\s\\S]*$`)

/**
 * graphql-js quotes the offending value in several messages (a variable's JSON, a literal, a
 * string token), and that value may be message content or a token pasted into the wrong place.
 * These keep what locates the mistake (variable, path, type, line and column) and drop the value.
 */
export function withoutEchoedValues(error: GraphQLError): string {
  const message = error.message
  const variable = VARIABLE_INVALID.exec(message)
  if (variable) {
    const definition = error.nodes?.[0]
    const type = definition?.kind === Kind.VARIABLE_DEFINITION ? print(definition.type) : undefined
    const detail = VARIABLE_PATH_AND_REASON.exec(message)
    if (detail) return `Variable "$${variable[1]}" got an invalid value${detail[1] ? ` at "${detail[1]}"` : ''}; ${detail[2]}`
    return `Variable "$${variable[1]}" got an invalid value${type ? `; expected type "${type}"` : ''}.`
  }
  if (ENUM_VALUE_UNKNOWN.test(message)) return message.replace(ENUM_VALUE_UNKNOWN, 'The value does not exist in the $1 enum.')
  for (const pattern of [SYNTAX_TOKEN_VALUE, SYNTAX_ESCAPE, LITERAL_FOUND, ARGUMENT_INVALID, SCALAR_CANNOT_REPRESENT])
    if (pattern.test(message)) return message.replace(pattern, '$1.')
  return message
}

/** A double-quoted part longer than the echo bound; graphql-js and Yoga quote every name they repeat. */
const LONG_QUOTED = new RegExp(`"([^"]{${MAX_ECHOED_CHARACTERS + 1},})"`, 'g')

/**
 * graphql-js and Yoga repeat the names a document or request uses (an unknown field, argument,
 * fragment, variable or operation name, an unexpected body parameter), and a Name token can be
 * half a megabyte long. Each quoted part is cut to what `echoed` allows, so no message repeats more
 * than 64 characters of client input (README "Errors"); the server's own messages bound theirs with `echoed` too.
 */
export function withBoundedEchoes(message: string): string {
  return message.replace(LONG_QUOTED, (_quoted, inner: string) => `"${echoed(inner)}"`)
}

/** The first cause that is not a GraphQLError (a resolver's own failure), if any. */
function nonGraphQLCause(error: GraphQLError): unknown {
  for (let cause: unknown = error.originalError; cause; cause = (cause as GraphQLError).originalError)
    if (!(cause instanceof GraphQLError)) return cause
  return undefined
}

/** What the error masking tells readiness (/readyz) of each database cause it answers UNAVAILABLE. */
export interface DatabaseFaultListener {
  /** An operation met an unreachable database. */
  onUnreachable?: (cause: unknown) => void
  /** An operation's write was refused by a database that answers (a full disk, a file locked by another process). */
  onWritesRefused?: (cause: unknown) => void
}

/**
 * Yoga's error masking (both transports), which drops every cause that is not a GraphQLError, except
 * a database that cannot serve the request now (saturated, unreachable, or refusing writes): the
 * client learns to retry (UNAVAILABLE, over HTTP a 503 with Retry-After), not that the server broke.
 * It must happen here, where the cause is still known; the listener sees each unreachable or
 * refused-write cause (readiness turns 503 at once).
 */
export function databaseAwareMaskError(listener: DatabaseFaultListener = {}): typeof yogaMaskError {
  return (error, message, isDev) => {
    const cause = error instanceof GraphQLError ? nonGraphQLCause(error) : error
    const unreachable = isDatabaseUnreachable(cause)
    const writesRefused = !unreachable && isDatabaseRefusingWrites(cause)
    if (unreachable) listener.onUnreachable?.(cause)
    if (writesRefused) listener.onWritesRefused?.(cause)
    if (!unreachable && !writesRefused && !isDatabaseSaturated(cause)) return yogaMaskError(error, message, isDev)
    const location = error instanceof GraphQLError ? { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path } : {}
    const text = unreachable ? DATABASE_UNREACHABLE_MESSAGE : writesRefused ? DATABASE_WRITES_REFUSED_MESSAGE : DATABASE_BUSY_MESSAGE
    return new GraphQLError(text, { ...location, extensions: { code: 'UNAVAILABLE', http: UNAVAILABLE_HTTP } })
  }
}

export const maskError: typeof yogaMaskError = databaseAwareMaskError()

function contractCode(error: GraphQLError): ErrorCode {
  const code = error.extensions?.code
  if (typeof code === 'string' && CONTRACT_ERROR_CODES.has(code)) return code as ErrorCode
  if (typeof code === 'string' && REQUEST_ERROR_CODES.has(code)) return 'BAD_USER_INPUT'
  // Without a path the error arose before any resolver ran: from the request (variables, operation name).
  return error.path === undefined ? 'BAD_USER_INPUT' : 'INTERNAL_SERVER_ERROR'
}

function asGraphQLError(error: GraphQLError | GraphQLFormattedError): GraphQLError {
  if (error instanceof GraphQLError) return error
  return new GraphQLError(String(error.message), { path: error.path, extensions: error.extensions })
}

/**
 * The one shape every error leaves in: a contract code, no echoed request values, no internals
 * (originalError, stack), and anything not raised as a GraphQLError masked as INTERNAL_SERVER_ERROR.
 * Over HTTP `http` and `unexpected` stay, because Yoga reads them for the status and strips them itself.
 */
export function toClientError(error: GraphQLError | GraphQLFormattedError, transport: ErrorTransport = 'http'): GraphQLError {
  const source = asGraphQLError(error)
  const { originalError, stack: _s, exception: _e, http, unexpected, ...rest } = source.extensions ?? {}
  // Yoga answers 400 (not the spec's 200 for application/json) only while it sees a non-GraphQL originalError,
  // as for a body that is not JSON: removing that excerpt must not turn a malformed request into a 200.
  const status =
    originalError !== undefined && !(originalError instanceof GraphQLError) && http && typeof http === 'object'
      ? { ...http, spec: false }
      : http
  const internals = transport === 'http' ? { ...(status !== undefined && { http: status }), ...(unexpected !== undefined && { unexpected }) } : {}
  const location = { nodes: source.nodes, source: source.source, positions: source.positions, path: source.path }
  if (nonGraphQLCause(source) !== undefined)
    return new GraphQLError(UNEXPECTED_ERROR_MESSAGE, {
      ...location,
      extensions: { code: 'INTERNAL_SERVER_ERROR', ...internals, ...(transport === 'http' && { unexpected: true }) },
    })
  return new GraphQLError(withBoundedEchoes(withoutEchoedValues(source)), { ...location, extensions: { ...rest, code: contractCode(source), ...internals } })
}

export function toClientErrors(errors: readonly (GraphQLError | GraphQLFormattedError)[], transport: ErrorTransport, count: ErrorCounter): GraphQLError[] {
  return errors.map((error) => {
    const clientError = toClientError(error, transport)
    count(clientError.extensions.code as ErrorCode)
    return clientError
  })
}

/** For graphql-ws onNext: the result with its errors in client shape (undefined when it has none). */
export function socketResult(result: ExecutionResult | { errors?: readonly GraphQLFormattedError[] }, count: ErrorCounter) {
  if (!result.errors?.length) return undefined
  return { ...result, errors: toClientErrors(result.errors, 'ws', count).map((e) => e.toJSON()) }
}

/** For graphql-ws onError: the error frame's payload. */
export function socketErrors(errors: readonly GraphQLError[], count: ErrorCounter): GraphQLFormattedError[] {
  return toClientErrors(errors, 'ws', count).map((e) => e.toJSON())
}
