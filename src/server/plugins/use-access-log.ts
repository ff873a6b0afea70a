import { randomUUID } from 'node:crypto'
import type { IncomingMessage, RequestListener } from 'node:http'
import type { Plugin } from 'graphql-yoga'
import type { Logger } from '../../observability/logger.ts'
import { isAsyncIterable } from '../../util/async-iterators.ts'

/**
 * One info line for every request the server refuses, so an operator sees who is turned away and
 * why: method, path, status, the GraphQL error code, how long it took, the client's address and a
 * request id. Refused: a 4xx answer on any route (400, 401, 403, 405, 413, 415, 429, …) but 404,
 * and a /graphql answer whose error says the caller may not (GraphQL answers a missing or
 * revoked token with 200 and UNAUTHENTICATED). Never a body, a header value, a token or the
 * query string: the path is cut at `?`. Served requests are not logged (the metrics count them);
 * 5xx answers are logged where they happen, with their cause.
 */
export const ACCESS_LOG_ACTION = 'http.refused'

const REFUSAL_CODES: ReadonlySet<string> = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'RATE_LIMITED'])

function refused(status: number, code: string | undefined): boolean {
  return (status >= 400 && status < 500 && status !== 404) || (code !== undefined && REFUSAL_CODES.has(code))
}

/** The `extensions.code` of the first error /graphql answered with, per request, noted by the plugin below. */
const graphqlCodes = new WeakMap<IncomingMessage, string>()

/** Longest path logged: a path is the client's text, as long as it likes. */
const MAX_PATH_CHARACTERS = 200
/** A request id a proxy in front may send (X-Request-Id) is kept if it looks like one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/

function requestIdOf(req: IncomingMessage): string {
  const sent = req.headers['x-request-id']
  return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID()
}

function pathOf(req: IncomingMessage): string {
  const path = (req.url ?? '/').split('?', 1)[0]!.split('#', 1)[0]!
  return path.length > MAX_PATH_CHARACTERS ? `${path.slice(0, MAX_PATH_CHARACTERS)}…` : path
}

/**
 * Wraps the server's request listener: every response carries an `X-Request-Id` (the one a proxy
 * sent, or a new one), and a refused request is logged once its answer has been sent.
 */
export function withAccessLog(logger: Logger, listener: RequestListener): RequestListener {
  return (req, res) => {
    const started = performance.now()
    // Read now: once a refused body's socket is destroyed, Node 24 has no req.socket when the response closes.
    const address = req.socket?.remoteAddress
    const requestId = requestIdOf(req)
    res.setHeader('x-request-id', requestId)
    res.once('close', () => {
      const status = res.statusCode
      const code = graphqlCodes.get(req)
      if (!res.headersSent || !refused(status, code)) return
      logger.info(
        {
          action: ACCESS_LOG_ACTION,
          method: req.method,
          path: pathOf(req),
          status,
          code,
          ms: Math.round(performance.now() - started),
          address,
          requestId,
        },
        'request refused',
      )
    })
    listener(req, res)
  }
}

/**
 * Notes the contract code /graphql answers with (RATE_LIMITED for a 429, BAD_USER_INPUT for a 413
 * or a malformed request, …) for the access log line. Last in the plugin list: it reads the result
 * as it leaves, after every other plugin has mapped its errors.
 */
export function accessLogPlugin(): Plugin {
  return {
    onResultProcess({ result, serverContext }) {
      const req = (serverContext as { req?: IncomingMessage }).req
      if (!req || isAsyncIterable(result)) return
      const results = Array.isArray(result) ? result : [result]
      const code = results.flatMap((each) => ('errors' in each ? (each.errors ?? []) : []))[0]?.extensions?.code
      if (typeof code === 'string') graphqlCodes.set(req, code)
    },
  }
}
