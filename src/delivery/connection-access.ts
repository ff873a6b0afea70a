import type { AccessControl } from '../access/access-control.ts'
import type { Principal } from '../store/users.ts'
import type { Scheduler } from '../util/scheduler.ts'

/** Longest a revoked socket waits for the answers it is owed before it closes anyway. */
export const REVOKED_DRAIN_MS = 500

export interface ConnectionAccessHooks {
  /** Closes the socket once the queued responses are written (4403). */
  closeRevoked(): void
  /** Closes the socket now, whatever is queued (the drain took too long). */
  closeNow(): void
  /** Ends one subscription with a FORBIDDEN error; the connection stays open. */
  endSubscription(id: string): void
  timers: Scheduler
}

/**
 * One WebSocket connection's access (contract v1.3): the caller its token authenticates, each
 * operation authorized against the token's current state, and an entry in the instance's
 * AccessControl for the socket (its token) and for each subscription (its workspace), so a
 * revocation on any instance closes the socket with 4403 or ends the subscription with FORBIDDEN,
 * as does a membership the instance's re-check finds gone (removed without the API).
 * Every entry is released on every way its owner ends.
 */
export class ConnectionAccess {
  principal: Principal | undefined
  #revoked = false
  #release: (() => void) | undefined
  // The tables below are made when first needed: an idle connection holds none but #holds.
  /** Subscription id → the workspaces its resolver named, and the access generation it was checked at. */
  #pending: Map<string, { workspaces: string[]; since: number }> | undefined
  /** Subscription id → releases of its workspace entries. */
  #holds: Map<string, (() => void)[]> | undefined
  /** Queries and mutations being answered: a revoked socket closes once they are written. */
  #answering: Set<string> | undefined
  #drainTimer: unknown

  constructor(
    private readonly access: AccessControl,
    private readonly hooks: ConnectionAccessHooks,
  ) {}

  /** connection_init: true when the token authenticates (the socket is then tied to it). */
  async connect(token: string | undefined): Promise<boolean> {
    const since = this.access.generation
    const principal = await this.access.principal(token)
    if (!principal) return false
    this.principal = principal
    this.#release = this.access.hold({ userId: principal.userId, tokenHash: principal.tokenHash, end: () => this.revoke() }, since)
    return true
  }

  /**
   * The caller for one operation, or null (the socket is then closing): the instance's cached
   * caller, which every revocation event drops at once (so no database read per operation: under
   * a saturated pool a read here would hold the operation for the pool's whole wait).
   */
  async current(): Promise<Principal | null> {
    const tokenHash = this.principal?.tokenHash
    if (this.#revoked || tokenHash === undefined) return null
    let principal: Principal | null
    try {
      principal = await this.access.principalByHash(tokenHash)
    } catch {
      // The database could not answer a cache miss (saturated, or down): the caller as of the last
      // revocation event stands, and the operation's own database work answers UNAVAILABLE.
      return this.principal ?? null
    }
    if (!principal) this.revoke()
    return principal
  }

  /** Generation to pass to `subscribing`, read before the operation's own checks. */
  get generation(): number {
    return this.access.generation
  }

  subscribing(id: string, workspaces: string[], since: number): void {
    ;(this.#pending ??= new Map()).set(id, { workspaces, since })
  }

  answering(id: string): void {
    ;(this.#answering ??= new Set()).add(id)
  }

  /** The subscription's stream exists: from now on, removal from any of its workspaces ends it. */
  subscribed(id: string): void {
    const pending = this.#pending?.get(id)
    this.#pending = without(this.#pending, id)
    const { userId, tokenHash } = this.principal ?? {}
    if (!pending || userId === undefined || pending.workspaces.length === 0) return
    const releases: (() => void)[] = []
    ;(this.#holds ??= new Map()).set(id, releases)
    for (const workspaceId of pending.workspaces)
      releases.push(this.access.hold({ userId, tokenHash, workspaceId, end: () => this.hooks.endSubscription(id) }, pending.since))
  }

  /** Any operation ended (complete, error, refused, or its socket closed). */
  ended(id: string): void {
    this.#pending = without(this.#pending, id)
    for (const release of this.#holds?.get(id) ?? []) release()
    this.#holds = without(this.#holds, id)
    const answered = this.#answering?.has(id) === true
    this.#answering = without(this.#answering, id)
    // graphql-ws writes the operation's complete frame right after this hook returns: close after it.
    if (answered && this.#revoked && this.#answering === undefined) this.hooks.timers.setTimeout(() => this.hooks.closeRevoked(), 0)
  }

  /** The socket closed: every entry goes. */
  closed(): void {
    this.#release?.()
    this.#release = undefined
    for (const releases of this.#holds?.values() ?? []) for (const release of releases) release()
    this.#holds = undefined
    this.#pending = undefined
    this.#answering = undefined
    if (this.#drainTimer !== undefined) this.hooks.timers.clearTimeout(this.#drainTimer)
    this.#drainTimer = undefined
  }

  /** The token no longer authenticates: nothing more is taken, owed answers are written, then 4403. */
  revoke(): void {
    if (this.#revoked) return
    this.#revoked = true
    if (!this.#answering?.size) return this.hooks.closeRevoked()
    this.#drainTimer = this.hooks.timers.setTimeout(() => this.hooks.closeNow(), REVOKED_DRAIN_MS)
  }
}

/** The table without `id`, or none once empty: an idle connection keeps no empty tables. */
function without<T extends Map<string, unknown> | Set<string>>(table: T | undefined, id: string): T | undefined {
  table?.delete(id)
  return table?.size ? table : undefined
}
