import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'

const viewer = JSON.stringify({ query: '{ viewer { user { id } } }' })

describe('GraphQL waits for readiness (sqlite)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite')
  })
  afterAll(() => server?.close())

  const post = () =>
    fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.adminToken}` },
      body: viewer,
    })

  it('answers 503 UNAVAILABLE with Retry-After while readiness is held (startup recovery, shutdown), and serves once ready', async () => {
    const release = server.readiness.hold('startup recovery')
    try {
      const refused = await post()
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('1')
      const body = (await refused.json()) as { errors: { extensions: { code: string } }[]; data?: unknown }
      expect(body.data).toBeUndefined()
      expect(body.errors.map((e) => e.extensions.code)).toEqual(['UNAVAILABLE'])
      // Liveness is unaffected.
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    } finally {
      release()
    }
    const served = await post()
    expect(served.status).toBe(200)
    expect(((await served.json()) as { data: { viewer: { user: { id: string } } } }).data.viewer.user.id).toBeTruthy()
  })
})

describe('WebSocket waits for readiness (sqlite)', () => {
  it('refuses the handshake with 503 while readiness is held, and accepts once ready', async () => {
    const { default: WebSocket } = await import('ws')
    const server = await startTestServer('sqlite')
    const handshake = () =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws')
        socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0))
        socket.on('open', () => {
          socket.close()
          resolve(101)
        })
        socket.on('error', () => undefined)
      })
    try {
      const release = server.readiness.hold('startup recovery')
      expect(await handshake()).toBe(503)
      release()
      expect(await handshake()).toBe(101)
    } finally {
      await server.close()
    }
  })
})
