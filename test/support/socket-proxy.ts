import type { BrowserContext, WebSocketRoute } from 'playwright-core'

/** One graphql-ws frame as seen between the page and the server. */
export interface Frame {
  connection: number
  direction: 'sent' | 'received'
  type: string
  id?: string
  payload?: { query?: string; variables?: Record<string, unknown> } & Record<string, unknown>
  bytes: number
}

/**
 * Stands between the page's WebSockets to /graphql and the real server (Playwright's
 * routeWebSocket), recording every frame both ways, so a test counts what the page really
 * subscribes and receives; it can also cut the link and refuse reconnects for a while, or hold
 * back one answer while cutting the link (an uncertain request).
 */
export class SocketProxy {
  readonly frames: Frame[] = []
  connections = 0
  private refusing = false
  private open = new Set<{ page: WebSocketRoute; server: WebSocketRoute }>()
  private dropAnswerOf: ((frame: Frame) => boolean) | undefined

  static async attach(context: BrowserContext): Promise<SocketProxy> {
    const proxy = new SocketProxy()
    await context.routeWebSocket(/\/graphql$/, (page) => proxy.connect(page))
    return proxy
  }

  private connect(page: WebSocketRoute) {
    const connection = ++this.connections
    if (this.refusing) {
      // The page sees a link that fails at once, as when the network is gone.
      void page.close({ code: 1013, reason: 'offline (test)' })
      return
    }
    const server = page.connectToServer()
    const link = { page, server }
    this.open.add(link)
    const heldIds = new Set<string>()
    page.onMessage((message) => {
      const frame = this.record(connection, 'sent', message)
      if (frame && this.dropAnswerOf?.(frame) && frame.id) {
        heldIds.add(frame.id)
        this.dropAnswerOf = undefined
      }
      server.send(message)
    })
    server.onMessage((message) => {
      const frame = this.record(connection, 'received', message)
      if (frame?.id && heldIds.has(frame.id)) {
        // The server answered; the page never sees it: the link dies with the answer in flight.
        heldIds.clear()
        this.cut(link)
        return
      }
      page.send(message)
    })
    page.onClose((code, reason) => {
      this.open.delete(link)
      void server.close({ code, reason }).catch(() => undefined)
    })
    server.onClose((code, reason) => {
      this.open.delete(link)
      void page.close({ code, reason }).catch(() => undefined)
    })
  }

  private record(connection: number, direction: Frame['direction'], message: string | Buffer): Frame | undefined {
    const text = typeof message === 'string' ? message : message.toString('utf8')
    try {
      const parsed = JSON.parse(text) as Omit<Frame, 'connection' | 'direction' | 'bytes'>
      const frame: Frame = { connection, direction, bytes: Buffer.byteLength(text), ...parsed }
      this.frames.push(frame)
      return frame
    } catch {
      return undefined
    }
  }

  private cut(link: { page: WebSocketRoute; server: WebSocketRoute }) {
    this.open.delete(link)
    void link.page.close({ code: 1013, reason: 'link lost (test)' }).catch(() => undefined)
    void link.server.close({ code: 1000, reason: 'link lost (test)' }).catch(() => undefined)
  }

  /** Cuts every open link; with `refuse`, every reconnect fails until `restore()`. */
  dropAll(options: { refuse?: boolean } = {}) {
    this.refusing = options.refuse ?? false
    for (const link of [...this.open]) this.cut(link)
  }

  restore() {
    this.refusing = false
  }

  /** The next request matching `match` reaches the server, but its answer is lost with the link. */
  loseAnswerOf(match: (frame: Frame) => boolean) {
    this.dropAnswerOf = match
  }

  /** Subscribe frames the page sent for an operation whose text contains `field`. */
  subscribes(field: string, since = 0): Frame[] {
    return this.frames.slice(since).filter((f) => f.direction === 'sent' && f.type === 'subscribe' && f.payload?.query?.includes(field))
  }

  /** `complete` frames the page sent for operations it had subscribed with `field`. */
  completes(field: string, since = 0): Frame[] {
    const ids = new Set(this.subscribes(field).map((f) => `${f.connection}:${f.id}`))
    return this.frames.slice(since).filter((f) => f.direction === 'sent' && f.type === 'complete' && ids.has(`${f.connection}:${f.id}`))
  }
}
