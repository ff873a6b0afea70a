import { CloseCode } from 'graphql-ws'
import { GraphQLError } from 'graphql'
import { bearerToken } from '../auth/tokens.ts'
import type { Logger } from '../observability/logger.ts'
import type { Principal } from '../store/users.ts'
import type { Scheduler } from '../util/scheduler.ts'
import { forbidden, type ErrorCode } from '../errors.ts'
import { REVOKED_DRAIN_MS } from './connection-access.ts'
import { errorFrame } from './detached-members.ts'
import type { Connection, GraphqlWsContext } from './gateway-connection.ts'

/**
 * onConnect: the connection_init payload's bearer token authenticates the socket. False (an
 * unknown or missing token) makes graphql-ws close it with 4403; the refusal is kept for that close's log line.
 */
export async function authenticateSocket(ctx: GraphqlWsContext, connection: Connection | undefined): Promise<boolean> {
  const header = ctx.connectionParams?.authorization
  const token = bearerToken(typeof header === 'string' ? header : undefined)
  if (!connection || !(await connection.access.connect(token))) {
    if (connection) connection.refusal = token ? 'unknown token' : 'no token'
    return false
  }
  connection.socketContext = ctx
  return true
}

/**
 * Sets an operation's caller, authorized against the token's current state (not its state at
 * connection_init); the errors that refuse the operation when the token no longer authenticates.
 */
export async function authorizeCaller(connection: Connection, operation: { principal: Principal | null }): Promise<readonly GraphQLError[] | undefined> {
  operation.principal = await connection.access.current()
  if (!operation.principal) return [new GraphQLError("This connection's token no longer authenticates.", { extensions: { code: 'UNAUTHENTICATED' } })]
  return undefined
}

/**
 * A revoked token: the socket closes with 4403 once the responses it is owed are written, and
 * within the contract's second even if it takes no more.
 */
export function closeRevoked(connection: Connection, timers: Scheduler): void {
  const socket = connection.socket
  if (socket.readyState === socket.OPEN) connection.closedByServer(CloseCode.Forbidden, { refusal: 'token revoked' })
  connection.scheduler.closeAfterControl(CloseCode.Forbidden, 'Forbidden')
  // A socket that takes no more never drains: closed anyway, within the contract's second.
  timers.setTimeout(() => socket.terminate(), REVOKED_DRAIN_MS)
}

/**
 * The caller's membership of the subscription's workspace was removed: it ends with FORBIDDEN as
 * a client's complete would end it (graphql-ws then sends nothing more for it), and the
 * connection's other operations go on.
 */
export function endForbidden(connection: Connection, id: string, { logger, countError }: { logger: Logger; countError: (code: ErrorCode) => void }): void {
  const member = connection.members?.get(id)
  if (member) {
    countError('FORBIDDEN')
    return member.stop(forbiddenFrame(id))
  }
  const operations = connection.socketContext?.subscriptions
  // Null while the stream is being made: graphql-ws then returns it itself, seeing the id gone.
  if (!operations || !(id in operations)) return
  const operation = operations[id]
  delete operations[id]
  connection.subscriptions.delete(id)
  connection.scheduler.enqueueControl(forbiddenFrame(id))
  countError('FORBIDDEN')
  if (operation && 'return' in operation && typeof operation.return === 'function')
    (operation.return(undefined) as Promise<unknown>).catch((err: unknown) => logger.warn({ err, client: connection.memberships.id, operation: id }, 'ending a forbidden subscription failed'))
}

const forbiddenFrame = (id: string) => errorFrame(id, [forbidden('this workspace').toJSON()])
