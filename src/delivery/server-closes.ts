import { CloseCode } from 'graphql-ws'
import type { Counter } from 'prom-client'
import type { Logger } from '../observability/logger.ts'

/**
 * Every way the server ends a WebSocket, as the `reason` label of websocket_server_closes_total.
 * A fixed set: graphql-ws's own close reasons name operation ids the client chose, so they are
 * never logged or used as labels.
 */
export const SERVER_CLOSE_REASONS = {
  1001: 'going_away',
  1002: 'protocol_error',
  /** No close frame: the socket is dropped, so the client sees 1006. */
  1006: 'keepalive_timeout',
  1007: 'invalid_payload',
  1008: 'policy_violation',
  1009: 'message_too_big',
  1013: 'queue_overflow',
  [CloseCode.BadRequest]: 'bad_message',
  [CloseCode.Unauthorized]: 'unauthorized',
  [CloseCode.Forbidden]: 'forbidden',
  [CloseCode.SubprotocolNotAcceptable]: 'subprotocol_not_acceptable',
  [CloseCode.ConnectionInitialisationTimeout]: 'init_timeout',
  [CloseCode.SubscriberAlreadyExists]: 'subscriber_exists',
  [CloseCode.TooManyInitialisationRequests]: 'too_many_init_requests',
  [CloseCode.InternalServerError]: 'internal_error',
} as const satisfies Record<number, string>

export type ServerCloseReason = (typeof SERVER_CLOSE_REASONS)[keyof typeof SERVER_CLOSE_REASONS] | 'other'

export const KEEPALIVE_CLOSE_CODE = 1006

export function serverCloseReason(code: number): ServerCloseReason {
  return (SERVER_CLOSE_REASONS as Record<number, ServerCloseReason>)[code] ?? 'other'
}

/**
 * The code `ws` already closed with when it refused what the client sent (it keeps the code in a
 * private symbol, the error code is public): a frame over maxPayload, bad UTF-8, a framing error.
 */
export function closeCodeOfSocketError(error: Error & { code?: string }): number {
  switch (error.code) {
    case 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH':
    case 'WS_ERR_UNSUPPORTED_DATA_PAYLOAD_LENGTH':
      return 1009
    case 'WS_ERR_INVALID_UTF8':
      return 1007
    case 'WS_ERR_TOO_MANY_BUFFERED_PARTS':
      return 1008
    default:
      return error.code?.startsWith('WS_ERR_') ? 1002 : CloseCode.InternalServerError
  }
}

/**
 * One log line and one count for a connection the server ends (the connection calls it once,
 * whatever ends it: a second close of the same connection is not counted again).
 */
export function recordServerClose(counter: Counter<'code' | 'reason'>, logger: Logger, client: string, address: string | undefined, code: number, detail?: Record<string, unknown>): void {
  const reason = serverCloseReason(code)
  counter.inc({ code: reason === 'other' ? 'other' : String(code), reason })
  // A shutdown closes every socket on purpose; everything else means a client to look at.
  logger[reason === 'going_away' ? 'info' : 'warn']({ action: 'ws.server-close', client, address, code, reason, ...detail }, 'websocket closed by the server')
}
