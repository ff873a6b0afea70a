import { createRequire } from 'node:module'
import type { GraphiQLOptions, Plugin } from 'graphql-yoga'

/**
 * GraphiQL served entirely by this server: Yoga's default page loads its script, stylesheet and
 * workers from a public CDN (blank page offline, every visit told to a third party). The assets
 * come from @graphql-yoga/render-graphiql, which bundles them; they are served as separate,
 * immutably cached files instead of being inlined, so the page itself stays a few hundred bytes
 * rather than ~9 MB on every visit.
 */

const assetsVersion = (createRequire(import.meta.url)('@graphql-yoga/render-graphiql/package.json') as { version: string }).version

/** Versioned so that an upgrade changes every URL and the immutable cache never serves stale files. */
export const GRAPHIQL_ASSETS_PATH = `/graphiql/${assetsVersion}`

type Bundle = typeof import('@graphql-yoga/render-graphiql/graphiql')

interface Asset {
  contentType: string
  body: (bundle: Bundle) => string | Uint8Array<ArrayBuffer>
}

const JS = 'text/javascript; charset=utf-8'

const assets: Record<string, Asset> = {
  'graphiql.js': { contentType: JS, body: (b) => b.js },
  'graphiql.css': { contentType: 'text/css; charset=utf-8', body: (b) => b.css },
  'favicon.ico': { contentType: 'image/x-icon', body: (b) => dataUrlBytes(b.favicon) },
  'editor.worker.js': { contentType: JS, body: (b) => b.editorWorkerService },
  'json.worker.js': { contentType: JS, body: (b) => b.jsonWorker },
  'graphql.worker.js': { contentType: JS, body: (b) => b.graphqlWorker },
}

/** Monaco asks for its workers by label; these are the labels GraphiQL's editors use. */
const workerUrls = {
  editorWorkerService: `${GRAPHIQL_ASSETS_PATH}/editor.worker.js`,
  json: `${GRAPHIQL_ASSETS_PATH}/json.worker.js`,
  graphql: `${GRAPHIQL_ASSETS_PATH}/graphql.worker.js`,
}

function dataUrlBytes(dataUrl: string): Uint8Array<ArrayBuffer> {
  return Buffer.from(dataUrl.slice(dataUrl.indexOf(',') + 1), 'base64')
}

// The bundle is ~9 MB of strings: loaded on the first asset request, not at every server start.
let bundle: Promise<Bundle> | undefined
function loadBundle(): Promise<Bundle> {
  bundle ??= import('@graphql-yoga/render-graphiql/graphiql').catch((error: unknown) => {
    bundle = undefined
    throw error
  })
  return bundle
}

const bodies = new Map<string, string | Uint8Array<ArrayBuffer>>()
async function assetBody(name: string, asset: Asset): Promise<string | Uint8Array<ArrayBuffer>> {
  let body = bodies.get(name)
  if (body === undefined) {
    body = asset.body(await loadBundle())
    bodies.set(name, body)
  }
  return body
}

/** Serves the GraphiQL assets under GRAPHIQL_ASSETS_PATH. */
export function graphiqlAssetsPlugin(): Plugin {
  const prefix = `${GRAPHIQL_ASSETS_PATH}/`
  return {
    async onRequest({ url, request, endResponse, fetchAPI }) {
      if (!url.pathname.startsWith(prefix)) return
      const name = url.pathname.slice(prefix.length)
      const asset = Object.hasOwn(assets, name) ? assets[name] : undefined
      if (!asset || (request.method !== 'GET' && request.method !== 'HEAD')) {
        endResponse(new fetchAPI.Response(null, { status: 404 }))
        return
      }
      const body = await assetBody(name, asset)
      endResponse(
        new fetchAPI.Response(request.method === 'HEAD' ? null : body, {
          status: 200,
          headers: { 'content-type': asset.contentType, 'cache-control': 'public, max-age=31536000, immutable' },
        }),
      )
    },
  }
}

export const README_FIRST_QUERY = '{ viewer { user { id name } workspaces { id name } } }'

/** What a new user needs: the first query of the README, which works once the header holds a token. */
export const graphiqlOptions: GraphiQLOptions = {
  title: 'Task status server',
  // Over SSE GraphiQL sends its headers editor's Authorization with every subscription, and an
  // error (an unknown token) shows in its result pane. Over WS it sent connection_init without
  // them: the socket closed with 4403 and GraphiQL retried in silence, forever.
  subscriptionsProtocol: 'SSE',
  headers: JSON.stringify({ Authorization: 'Bearer <token>' }, null, 2),
  defaultQuery: `# Put an admin or user token into the Authorization header below, then run:\n${README_FIRST_QUERY}\n`,
}

const htmlEscapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => htmlEscapes[c] ?? c)
}

/** JSON that cannot end the <script> element it is embedded in. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

/** Yoga's `renderGraphiQL`: a page whose every URL is on this server. */
export function renderOfflineGraphiQL(options: GraphiQLOptions): string {
  const title = escapeHtml(options.title ?? 'GraphiQL')
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${title}</title>
    <link rel="icon" href="${GRAPHIQL_ASSETS_PATH}/favicon.ico" />
    <link rel="stylesheet" href="${GRAPHIQL_ASSETS_PATH}/graphiql.css" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>You need to enable JavaScript to run this app.</noscript>
    <div id="root"></div>
    <script>
      const workerUrls = ${scriptJson(workerUrls)};
      self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_moduleId, label) => workerUrls[label] };
    </script>
    <script src="${GRAPHIQL_ASSETS_PATH}/graphiql.js"></script>
    <script>
      YogaGraphiQL.renderYogaGraphiQL(document.querySelector('#root'), ${scriptJson(options)});
    </script>
  </body>
</html>
`
}
