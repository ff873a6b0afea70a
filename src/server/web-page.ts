import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The task-switcher page: the static files Vite builds into dist/web (`npm run build:web`), served
 * at `/`. The compiled server finds them beside itself (<outDir>/web); the sources, run by tsx from
 * src/server, find them in the project's dist/web.
 */
export const WEB_ROOT = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../../dist/web/' : '../web/', import.meta.url))

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
}

/** Answers `/` and the built assets; false for every other path (GraphQL, operational routes). */
export async function handleWebPage(req: IncomingMessage, res: ServerResponse, root = WEB_ROOT): Promise<boolean> {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false
  const urlPath = (req.url ?? '/').split('?', 1)[0] ?? '/'
  const isPage = urlPath === '/' || urlPath === '/index.html'
  if (!isPage && !urlPath.startsWith('/assets/')) return false

  let relative: string
  try {
    relative = isPage ? 'index.html' : decodeURIComponent(urlPath.slice(1))
  } catch {
    return notFound(res)
  }
  const base = path.resolve(root) + path.sep
  const file = path.resolve(base, relative)
  // A path climbing out of the build (../, encoded or not) is refused, never resolved elsewhere.
  if (!file.startsWith(base)) return notFound(res)
  const info = await stat(file).catch(() => undefined)
  if (!info?.isFile()) {
    if (!isPage) return notFound(res)
    res
      .writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' })
      .end('The task-switcher page is not built yet: run `npm run build:web` (npm start does it), then reload.\nGraphiQL is at /graphql.\n')
    return true
  }
  res.writeHead(200, {
    'content-type': contentTypes[path.extname(file)] ?? 'application/octet-stream',
    'content-length': info.size,
    // Vite names every asset by its content hash; only the page itself must be revalidated.
    'cache-control': isPage ? 'no-cache' : 'public, max-age=31536000, immutable',
    'x-content-type-options': 'nosniff',
  })
  if (req.method === 'HEAD') {
    res.end()
    return true
  }
  await new Promise<void>((resolve, reject) => {
    createReadStream(file).on('error', reject).on('end', resolve).pipe(res)
  })
  return true
}

function notFound(res: ServerResponse): true {
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found\n')
  return true
}
