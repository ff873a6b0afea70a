import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { capturedLogger } from '../support/captured-logger.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { OPERATION_LIMITS } from '../../src/contract/operation-limits.ts'


const INFO = 30
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** Sent in every refused request's body, query string or headers: it must reach no log line. */
const SECRET = 'never-logged-7c1d'

describe('refused HTTP requests are logged once at info, without bodies, tokens or query text', () => {
  const log = capturedLogger()
  let server: TestServer
  let token: string
  beforeAll(async () => {
    server = await startTestServer('sqlite', {
      logger: log.logger,
      env: { RATE_LIMIT_MUTATIONS: '1', GITHUB_WEBHOOK_SECRET: 'webhook-secret-for-the-test', CORS_ORIGINS: 'https://app.example.com' },
    })
    // The user's one mutation of the window: its next one is refused.
    ;({ token } = await userWithWorkspace(server, 'refused'))
  })
  afterAll(() => server?.close())

  /** Sends the request; expects exactly one access line for it, and no secret in anything logged meanwhile. */
  async function refusal(send: () => Promise<Response>, expected: { method: string; path: string; status: number; code?: string }) {
    const seen = log.lines.length
    const response = await send()
    await response.arrayBuffer()
    expect(response.status).toBe(expected.status)
    // The line is written when the response closes, which may be just after the client has read it.
    await expect.poll(() => log.lines.slice(seen).filter((l) => l.action === 'http.refused').length).toBe(1)
    const line = log.lines.slice(seen).find((l) => l.action === 'http.refused')!
    expect(line).toEqual({
      ...line,
      level: INFO,
      action: 'http.refused',
      msg: 'request refused',
      code: undefined,
      ...expected,
      ms: expect.any(Number),
      address: '127.0.0.1',
      requestId: response.headers.get('x-request-id'),
    })
    // Nothing else: pino's own fields and the server's instance, no header, body or query field.
    expect(Object.keys(line).sort()).toEqual(
      ['level', 'time', 'pid', 'hostname', 'instance', 'action', 'msg', 'method', 'path', 'status', 'ms', 'address', 'requestId', ...(expected.code ? ['code'] : [])].sort(),
    )
    expect(line.requestId).toMatch(UUID)
    const written = log.raw.slice(seen).join('')
    expect(written).not.toContain(SECRET)
    expect(written).not.toContain(token)
    return line
  }

  const graphql = (body: string, headers: Record<string, string> = {}) =>
    fetch(server.graphqlUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

  it('429: a mutation over the rate limit, with its code', async () => {
    const body = JSON.stringify({ query: `mutation { createWorkspace(name: "${SECRET}") { id } }` })
    await refusal(() => graphql(body, { authorization: `Bearer ${token}` }), { method: 'POST', path: '/graphql', status: 429, code: 'RATE_LIMITED' })
  })

  it('413: a body over the limit', async () => {
    const body = JSON.stringify({ query: '{ __typename }', variables: { filler: `${SECRET}${'x'.repeat(OPERATION_LIMITS.maxRequestBodyBytes)}` } })
    await refusal(() => graphql(body), { method: 'POST', path: '/graphql', status: 413, code: 'BAD_USER_INPUT' })
  })

  it('413: a chunked body (no Content-Length) cut off once over the limit: logged with its address, and the server goes on', async () => {
    // The server answers before the body has all arrived and the socket is gone by the time the
    // response closes (Node 24 then has no req.socket): the line still names the client.
    const chunks = [`{"query":"{ __typename }","variables":{"filler":"${SECRET}`, 'x'.repeat(OPERATION_LIMITS.maxRequestBodyBytes), '"}}']
    const body = new ReadableStream({
      pull(controller) {
        const next = chunks.shift()
        if (next) controller.enqueue(new TextEncoder().encode(next))
        else controller.close()
      },
    })
    await refusal(() => fetch(server.graphqlUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit), {
      method: 'POST',
      path: '/graphql',
      status: 413,
      code: 'BAD_USER_INPUT',
    })
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
  })

  it('400: a body that is not JSON, and a GET whose query text does not parse (the path is logged without it)', async () => {
    await refusal(() => graphql(`{"query": "${SECRET}`), { method: 'POST', path: '/graphql', status: 400, code: 'BAD_USER_INPUT' })
    const url = `${server.graphqlUrl}?query=${encodeURIComponent(`{ ${SECRET} (`)}`
    await refusal(() => fetch(url, { headers: { accept: 'application/graphql-response+json' } }), { method: 'GET', path: '/graphql', status: 400, code: 'BAD_USER_INPUT' })
  })

  it('401: a webhook delivery with a bad signature', async () => {
    const send = () =>
      fetch(`${server.url}/webhooks/github`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-hub-signature-256': `sha256=${SECRET}` },
        body: JSON.stringify({ zen: SECRET }),
      })
    await refusal(send, { method: 'POST', path: '/webhooks/github', status: 401 })
  })

  it('403: a CORS preflight from an origin not allowed', async () => {
    const send = () =>
      fetch(server.graphqlUrl, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example.com', 'access-control-request-method': 'POST' } })
    await refusal(send, { method: 'OPTIONS', path: '/graphql', status: 403 })
  })

  it('200 UNAUTHENTICATED: GraphQL refusing a token it does not know', async () => {
    const body = JSON.stringify({ query: 'mutation { createWorkspace(name: "w") { id } }' })
    await refusal(() => graphql(body, { authorization: `Bearer tss_${SECRET}` }), { method: 'POST', path: '/graphql', status: 200, code: 'UNAUTHENTICATED' })
  })

  it('keeps the request id a proxy sent, and logs no request that was served', async () => {
    const seen = log.lines.length
    const served = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'proxy-req-42' } })
    expect(served.headers.get('x-request-id')).toBe('proxy-req-42')
    const viewer = await graphql(JSON.stringify({ query: '{ viewer { user { name } } }' }), { authorization: `Bearer ${token}` })
    expect(viewer.status).toBe(200)
    await viewer.arrayBuffer()
    const refused = await fetch(server.graphqlUrl, { method: 'PUT', headers: { 'x-request-id': 'proxy-req-43' } })
    await refused.arrayBuffer()
    await expect.poll(() => log.lines.slice(seen).filter((l) => l.action === 'http.refused')).toEqual([
      expect.objectContaining({ method: 'PUT', status: refused.status, requestId: 'proxy-req-43' }),
    ])
    expect(refused.status).toBe(405)
  })
})
