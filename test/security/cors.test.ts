import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'

/**
 * MAPPING.md v1.3: cross-origin requests are refused unless their origin is listed in CORS_ORIGINS
 * (comma-separated, exact match; unset = same origin only). Refused means what a browser treats
 * as refused: a preflight answered 403 with no Access-Control-* header (the browser then sends
 * nothing), and any other request answered without Access-Control-Allow-Origin (the page cannot
 * read it). Every route follows the same policy.
 */
const LISTED = 'https://app.example.com'
const ALSO_LISTED = 'http://localhost:5173'
const UNLISTED = 'https://evil.example'

type Setting = 'unset' | 'listed'

interface Row {
  /** Who asks, and what. */
  what: string
  server: Setting
  /** `self` stands for the server's own origin (http://127.0.0.1:<port>). */
  origin?: string | 'self'
  preflight?: boolean
  path?: string
  /** What must happen. */
  status: number
  allowOrigin: string | null
  credentials: boolean
}

const ROWS: Row[] = [
  // CORS_ORIGINS unset: same origin only.
  { what: 'preflight from another origin', server: 'unset', origin: UNLISTED, preflight: true, status: 403, allowOrigin: null, credentials: false },
  { what: 'simple POST from another origin (no preflight): served, unreadable', server: 'unset', origin: UNLISTED, status: 200, allowOrigin: null, credentials: false },
  { what: 'POST from the same origin (a browser sends Origin on it)', server: 'unset', origin: 'self', status: 200, allowOrigin: null, credentials: false },
  { what: 'POST without Origin (curl, another server)', server: 'unset', status: 200, allowOrigin: null, credentials: false },
  { what: 'preflight from the page the server itself serves', server: 'unset', origin: 'self', preflight: true, status: 204, allowOrigin: 'self', credentials: false },
  { what: 'preflight from a sandboxed frame (Origin: null)', server: 'unset', origin: 'null', preflight: true, status: 403, allowOrigin: null, credentials: false },
  // CORS_ORIGINS=https://app.example.com,http://localhost:5173
  { what: 'preflight from a listed origin', server: 'listed', origin: LISTED, preflight: true, status: 204, allowOrigin: LISTED, credentials: true },
  { what: 'preflight from the second listed origin', server: 'listed', origin: ALSO_LISTED, preflight: true, status: 204, allowOrigin: ALSO_LISTED, credentials: true },
  { what: 'POST from a listed origin', server: 'listed', origin: LISTED, status: 200, allowOrigin: LISTED, credentials: true },
  { what: 'preflight from an unlisted origin', server: 'listed', origin: UNLISTED, preflight: true, status: 403, allowOrigin: null, credentials: false },
  { what: 'simple POST from an unlisted origin', server: 'listed', origin: UNLISTED, status: 200, allowOrigin: null, credentials: false },
  { what: 'preflight from a listed host under another scheme', server: 'listed', origin: 'http://app.example.com', preflight: true, status: 403, allowOrigin: null, credentials: false },
  { what: 'preflight from a look-alike host', server: 'listed', origin: 'https://app.example.com.evil.example', preflight: true, status: 403, allowOrigin: null, credentials: false },
  { what: 'preflight from a listed host on another port', server: 'listed', origin: 'https://app.example.com:8443', preflight: true, status: 403, allowOrigin: null, credentials: false },
  // The other routes follow the same policy.
  ...['/healthz', '/readyz', '/metrics', '/webhooks/github'].flatMap((path): Row[] => [
    { what: `${path}: preflight from an unlisted origin`, server: 'listed', path, origin: UNLISTED, preflight: true, status: 403, allowOrigin: null, credentials: false },
    { what: `${path}: preflight from a listed origin`, server: 'listed', path, origin: LISTED, preflight: true, status: 204, allowOrigin: LISTED, credentials: true },
    { what: `${path}: preflight from another origin, CORS_ORIGINS unset`, server: 'unset', path, origin: LISTED, preflight: true, status: 403, allowOrigin: null, credentials: false },
  ]),
  { what: '/healthz: GET from a listed origin', server: 'listed', path: '/healthz', origin: LISTED, status: 200, allowOrigin: LISTED, credentials: true },
  { what: '/healthz: GET from an unlisted origin', server: 'listed', path: '/healthz', origin: UNLISTED, status: 200, allowOrigin: null, credentials: false },
]

describe('CORS: cross-origin requests only from CORS_ORIGINS (sqlite)', () => {
  const servers = {} as Record<Setting, TestServer>

  beforeAll(async () => {
    ;[servers.unset, servers.listed] = await Promise.all([
      startTestServer('sqlite'),
      startTestServer('sqlite', { env: { CORS_ORIGINS: ` ${LISTED}, ${ALSO_LISTED} ` } }),
    ])
  })
  afterAll(async () => {
    await Promise.all(Object.values(servers).map((s) => s.close()))
  })

  it.each(ROWS)('$server: $what → $status', async ({ server: setting, origin, preflight, path = '/graphql', status, allowOrigin, credentials }) => {
    const server = servers[setting]
    const self = server.url
    const originHeader = origin === 'self' ? self : origin
    const headers: Record<string, string> = { ...(originHeader && { origin: originHeader }) }
    const isGraphql = path === '/graphql'
    let response: Response
    if (preflight) {
      response = await fetch(`${self}${path}`, {
        method: 'OPTIONS',
        headers: { ...headers, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      })
    } else if (isGraphql) {
      response = await fetch(server.graphqlUrl, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', authorization: `Bearer ${server.adminToken}` },
        body: JSON.stringify({ query: '{ viewer { user { id } } }' }),
      })
    } else {
      response = await fetch(`${self}${path}`, { headers })
    }
    const body = await response.text()
    expect(response.status).toBe(status)
    expect(response.headers.get('access-control-allow-origin')).toBe(allowOrigin === 'self' ? self : allowOrigin)
    expect(response.headers.get('access-control-allow-credentials')).toBe(credentials ? 'true' : null)
    expect(response.headers.get('vary') ?? '').toMatch(/\bOrigin\b/)
    if (status === 403) {
      // Nothing a browser would take as permission, and no body for a page to read.
      for (const name of response.headers.keys()) expect(name).not.toMatch(/^access-control-/)
      expect(body).toBe('')
    }
    if (status === 204) {
      expect(response.headers.get('access-control-allow-methods')).toMatch(/\bPOST\b/)
      expect(response.headers.get('access-control-allow-headers')).toMatch(/\bauthorization\b/)
    }
    if (isGraphql && !preflight) expect((JSON.parse(body) as { data?: unknown }).data).toEqual({ viewer: { user: { id: expect.any(String) } } })
  })
})
