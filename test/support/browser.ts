import { chromium, type Browser, type BrowserContext, type Page, type Request } from 'playwright-core'

/** Debian's package (scripts/ensure-test-services.sh installs it): playwright-core downloads no browser. */
export const CHROMIUM_PATH = '/usr/bin/chromium'

const chromiumArgs = [
  '--headless',
  '--no-sandbox', // tests run as root, where Chromium's sandbox refuses to start
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  // Chromium's own phoning home would show up as requests to other hosts, and costs time.
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/**
 * Headless Debian Chromium. Playwright passes a fresh --user-data-dir of its own (it refuses one in
 * args) and deletes it on close, so no state carries over between tests.
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: chromiumArgs })
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]', '::1'])

/** True for URLs a page may load without leaving the machine: loopback hosts, data: and blob: URLs. */
export function isLocalUrl(url: string): boolean {
  const parsed = new URL(url)
  if (parsed.protocol === 'data:' || parsed.protocol === 'blob:' || parsed.protocol === 'about:') return true
  return loopbackHosts.has(parsed.hostname) || parsed.hostname.startsWith('127.')
}

/**
 * Aborts every request of the context to a non-loopback host and records every such attempt
 * (also those of workers and WebSockets, which page.route does not see), so a test can assert
 * that none was even tried.
 */
export async function blockOtherHosts(context: BrowserContext): Promise<{ attempted: string[] }> {
  const attempted: string[] = []
  const note = (url: string) => {
    if (!isLocalUrl(url)) attempted.push(url)
  }
  await context.route(
    (url) => !isLocalUrl(url.href),
    (route) => route.abort('blockedbyclient'),
  )
  await context.routeWebSocket(
    (url) => !isLocalUrl(url.href),
    (socket) => socket.close(),
  )
  context.on('request', (request: Request) => note(request.url()))
  context.on('page', (page) => watchPage(page, note))
  for (const page of context.pages()) watchPage(page, note)
  return { attempted }
}

function watchPage(page: Page, note: (url: string) => void) {
  page.on('websocket', (socket) => note(socket.url()))
  page.on('worker', (worker) => note(worker.url()))
}
