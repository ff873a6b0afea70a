import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { isLocalUrl } from '../support/browser.ts'
import { GRAPHIQL_ASSETS_PATH, README_FIRST_QUERY } from '../../src/server/graphiql.ts'

const absoluteUrls = (text: string) => text.match(/\b(?:https?|wss?):\/\/[^\s"'`<>()\\]+/g) ?? []
const foreignUrls = (text: string) => absoluteUrls(text).filter((url) => !isLocalUrl(url))
const hostOf = (url: string) => new URL(url).hostname

/**
 * The vendored GraphiQL/Monaco/React bundles quote these hosts only as text that a browser never
 * fetches: XML namespaces, JSON-Schema ids, documentation links in error messages and help
 * texts, links a user may click, examples in comments. Any host outside this reviewed list (a
 * CDN, a font service, an analytics endpoint after an upgrade) fails the test until someone has
 * looked at it; the browser test proves at run time that nothing is fetched from any of them.
 */
const textOnlyHosts = new Set([
  'www.w3.org', // SVG/XHTML namespaces
  'lists.w3.org',
  'json-schema.org', // JSON-Schema draft ids, matched locally by the JSON worker
  'github.com',
  'react.dev',
  'code.visualstudio.com',
  'yarnpkg.com',
  'en.wikipedia.org',
  'commonmark.org',
  'prettier.io',
  'radix-ui.com',
  'microsoft.com',
  'www.onegraph.com',
  'www.rapidtables.com',
  '24ways.org',
  'www.example.com',
  'dummyhostname.com', // a placeholder base for parsing relative URLs
])

describe('GraphiQL page and assets name no other host (sqlite)', () => {
  let server: TestServer
  let html: string
  beforeAll(async () => {
    server = await startTestServer('sqlite')
    const response = await fetch(server.graphqlUrl, { headers: { accept: 'text/html' } })
    expect(response.status).toBe(200)
    html = await response.text()
  })
  afterAll(() => server?.close())

  /** Every same-server URL the page loads: attributes, and the worker URLs its inline script hands to Monaco. */
  const loadedPaths = () => {
    const attributes = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    const scriptPaths = [...html.matchAll(/"(\/[^"]+)"/g)].map((m) => m[1]!)
    return [...new Set([...attributes, ...scriptPaths])]
  }

  it('serves a page with no URL of another host, with the title, SSE subscriptions (they carry the headers editor token) and the README query', () => {
    expect(foreignUrls(html)).toEqual([])
    expect(html).toContain('<title>Task status server</title>')
    expect(html).toContain('"subscriptionsProtocol":"SSE"')
    expect(html).toContain(JSON.stringify(README_FIRST_QUERY).slice(1, -1))
    expect(html).toContain('Authorization')
    expect(html.length).toBeLessThan(10_000)
  })

  it('loads only its own assets, and their stylesheets and scripts name no host outside the reviewed text-only list', async () => {
    const paths = loadedPaths()
    // The page, its stylesheet, favicon, script and the three Monaco workers.
    expect(paths.sort()).toEqual(
      ['favicon.ico', 'graphiql.css', 'graphiql.js', 'editor.worker.js', 'json.worker.js', 'graphql.worker.js']
        .map((name) => `${GRAPHIQL_ASSETS_PATH}/${name}`)
        .sort(),
    )
    for (const path of paths) {
      const response = await fetch(new URL(path, server.url))
      expect(response.status, path).toBe(200)
      expect(response.headers.get('cache-control'), path).toContain('immutable')
      const contentType = response.headers.get('content-type') ?? ''
      if (path.endsWith('.ico')) {
        expect(contentType).toBe('image/x-icon')
        continue
      }
      const body = await response.text()
      if (path.endsWith('.css')) {
        expect(contentType).toMatch(/^text\/css/)
        // Stylesheets load what they name (fonts, images), so here nothing foreign at all.
        expect(foreignUrls(body), path).toEqual([])
        expect([...body.matchAll(/url\(\s*['"]?([^'")]+)/g)].map((m) => m[1]!).filter((u) => !u.startsWith('data:')), path).toEqual([])
      } else {
        expect(contentType).toMatch(/^text\/javascript/)
        const unreviewed = [...new Set(foreignUrls(body).map(hostOf))].filter((host) => !textOnlyHosts.has(host))
        expect(unreviewed, path).toEqual([])
      }
    }
  })

  it('answers 404 for a name that is not an asset', async () => {
    for (const name of ['nope.js', '..%2Fpackage.json', 'toString', '__proto__']) {
      const response = await fetch(`${server.url}${GRAPHIQL_ASSETS_PATH}/${name}`)
      expect(response.status, name).toBe(404)
    }
  })
})
