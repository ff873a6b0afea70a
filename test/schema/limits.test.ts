import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'

type Response = { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] }

describe('query depth limit (MAPPING.md: at most 12)', () => {
  let server: TestServer
  beforeAll(async () => (server = await startTestServer('sqlite')))
  afterAll(() => server?.close())

  const post = (query: string): Promise<Response> =>
    fetch(server.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.adminToken}` },
      body: JSON.stringify({ query }),
    }).then((r) => r.json() as Promise<Response>)

  /** A selection nested `depth` fields deep: `{ f1 { f2 { … fN } } }`. */
  const ofDepth = (depth: number) => {
    let selection = `f${depth}`
    for (let i = depth - 1; i >= 1; i--) selection = `f${i} { ${selection} }`
    return `{ ${selection} }`
  }
  const depthErrors = (r: Response) => (r.errors ?? []).filter((e) => /depth/i.test(e.message))

  it('refuses depth 13 with BAD_USER_INPUT before executing anything', async () => {
    const refused = await post(ofDepth(13))
    expect(depthErrors(refused).map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT'])
    expect(refused.data).toBeUndefined()
  })

  it('does not count depth 12 as too deep', async () => {
    expect(depthErrors(await post(ofDepth(12)))).toEqual([])
  })

  it('executes the deepest real query of the schema', async () => {
    const result = await post('{ viewer { workspaces { id } user { id } } }')
    expect(result.errors).toBeUndefined()
  })
})
