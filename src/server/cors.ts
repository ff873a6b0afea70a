import type { IncomingMessage, ServerResponse } from 'node:http'

/** What a listed origin's page may send; GraphQL over HTTP and the webhook need no more. */
const ALLOWED_METHODS = 'GET, POST, OPTIONS'
/** Readable by a listed origin's script: how long to wait after RATE_LIMITED or UNAVAILABLE. */
const EXPOSED_HEADERS = 'Retry-After'
/** How long a browser may reuse a preflight answer (seconds). */
const PREFLIGHT_MAX_AGE = '600'

/**
 * Whether `origin` is the request's own origin: its host (and port) is the Host the request was
 * sent to. The scheme is not compared, because behind a TLS-terminating proxy the page is https
 * and this server sees plain http; a browser sends Origin on same-origin POSTs too.
 */
function isSameOrigin(origin: string, host: string | undefined): boolean {
  if (!host) return false
  try {
    const url = new URL(origin)
    return url.host === new URL(`${url.protocol}//${host}`).host
  } catch {
    return false // "null" (sandboxed frames, file: pages) and anything malformed
  }
}

/**
 * The server's one CORS policy, applied to every HTTP route before routing (/graphql, /healthz,
 * /readyz, /metrics, /webhooks/github and the page), so no route answers cross-origin callers
 * differently. Yoga's own CORS handling is off: it would allow every origin, with credentials.
 *
 * - A request without Origin (curl, servers, GitHub's deliveries) or from the request's own
 *   origin is served as it is; same origin needs no CORS headers.
 * - A listed origin (CORS_ORIGINS, exact match) gets `Access-Control-Allow-Origin: <origin>` and
 *   `Access-Control-Allow-Credentials: true`, and its preflight is answered 204.
 * - Any other origin gets no Access-Control-* header, and its preflight is answered 403: a browser
 *   then sends nothing else, so such a page cannot make a request carrying an Authorization
 *   header (the only credential this server takes) nor read any answer. A simple request (one a
 *   browser sends without preflight, which cannot carry Authorization) is still served, as
 *   anonymous, and its answer is withheld from the page by the browser.
 *
 * `Vary: Origin` is on every response, because whether it carries Allow-Origin depends on it.
 */
export function corsPolicy(allowedOrigins: readonly string[]) {
  const listed = new Set(allowedOrigins)
  return {
    /** Sets the CORS headers of this response; true when the request was a preflight, answered here. */
    handle(req: IncomingMessage, res: ServerResponse): boolean {
      res.setHeader('Vary', 'Origin')
      const origin = req.headers.origin
      const preflight = req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined
      if (origin === undefined) return false
      const allowed = listed.has(origin)
      if (!preflight) {
        if (allowed) {
          res.setHeader('Access-Control-Allow-Origin', origin)
          res.setHeader('Access-Control-Allow-Credentials', 'true')
          res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS)
        }
        return false
      }
      res.setHeader('Vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers')
      if (!allowed && !isSameOrigin(origin, req.headers.host)) {
        res.writeHead(403, { 'content-length': '0' }).end()
        return true
      }
      const requestedHeaders = req.headers['access-control-request-headers']
      res.writeHead(204, {
        'Access-Control-Allow-Origin': origin,
        ...(allowed && { 'Access-Control-Allow-Credentials': 'true' }),
        'Access-Control-Allow-Methods': ALLOWED_METHODS,
        // Whatever a listed (trusted) page's client sends: authorization, content-type, tracing headers.
        ...(requestedHeaders && { 'Access-Control-Allow-Headers': requestedHeaders }),
        'Access-Control-Max-Age': PREFLIGHT_MAX_AGE,
        // Safari waits for a body on a 204 without it.
        'content-length': '0',
      })
      res.end()
      return true
    },
  }
}
