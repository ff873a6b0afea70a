/** What the schema may know about the WebSocket connection an operation arrived on. */
export interface ConnectionScope {
  readonly id: string
  /** Adds one subscription to the session's membership; true when this connection newly joins. */
  join(sessionId: string): boolean
  /** Removes one subscription; membership ends with the connection's last one for the session. */
  leave(sessionId: string): void
  /** Focus (Git fast monitoring) is per connection; the last focus wins. */
  focus(sessionId: string): void
  readonly focusedSessionId: string | undefined
  isMember(sessionId: string): boolean
}

export class ConnectionMemberships implements ConnectionScope {
  /** Made with the first session joined: a connection that follows only the workspace feed holds none. */
  #counts: Map<string, number> | undefined
  #focused: string | undefined

  constructor(readonly id: string) {}

  join(sessionId: string): boolean {
    const counts = (this.#counts ??= new Map())
    const count = counts.get(sessionId) ?? 0
    counts.set(sessionId, count + 1)
    return count === 0
  }

  leave(sessionId: string): void {
    const count = this.#counts?.get(sessionId) ?? 0
    if (count <= 1) this.#counts?.delete(sessionId)
    else this.#counts?.set(sessionId, count - 1)
  }

  focus(sessionId: string): void {
    this.#focused = sessionId
  }

  get focusedSessionId(): string | undefined {
    return this.#focused
  }

  isMember(sessionId: string): boolean {
    return this.#counts?.has(sessionId) ?? false
  }

  get sessions(): string[] {
    return [...(this.#counts?.keys() ?? [])]
  }
}
