import { hashToken } from '../auth/tokens.ts'
import type { Logger } from '../observability/logger.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import type { Principal } from '../store/users.ts'
import type { AccessEvent } from './access-events.ts'
import { ExpiringMap } from '../util/expiring-map.ts'
import { realScheduler, type Scheduler } from '../util/scheduler.ts'
import { MembershipRecheck } from './membership-recheck.ts'

/** Why something a caller holds open was ended. */
export type AccessEnd = 'credentials' | 'membership'

/**
 * Something open that a caller's access allowed: a WebSocket connection (no workspace) or one
 * subscription in a workspace. `end` is called at most once, when that access is gone.
 */
export interface AccessHolder {
  userId: string
  /** The token it was opened with; absent: any revocation of the user ends it. */
  tokenHash?: string
  workspaceId?: string
  end(why: AccessEnd): void
}

export interface AccessControlDeps {
  pubsub: PubSub
  logger: Logger
  /** The authoritative lookup (the database): a token's caller, only for an active user's current token. */
  lookup(tokenHash: string): Promise<Principal | null>
  /** Whether the user is a member of the workspace (the database). */
  isMember(userId: string, workspaceId: string): Promise<boolean>
  now?: () => number
  /** Timers of the membership re-checks of open subscriptions (tests inject them with `now`). */
  timers?: Scheduler
  /**
   * How long a looked-up caller or membership is trusted without an event (a bound should an
   * event be lost, or a membership be removed behind the API's back): open subscriptions'
   * memberships are read again within it too.
   */
  cacheMs?: number
  maxCached?: number
}

/** Events applied lately, so a holder registered just after one (its check read older state) still ends. */
const RECENT_EVENTS = 256
/** At most one log line per this long while membership re-checks fail (a database outage). */
const RECHECK_FAILURE_LOG_MS = 60_000

/**
 * Access that ends when it should (contract v1.3), for one instance. Revocations travel as events
 * on the `access` pub/sub topic, which every instance follows: each ends what it holds open for
 * the revoked token or membership, so open sockets and subscriptions cost no database read per
 * frame. Callers are looked up by token hash and kept for a few seconds; an event drops them at
 * once, and a gap in the pub/sub (Redis reconnected) drops them all and re-checks every holder.
 * A membership removed without an event (a database edit, a restore) ends the subscriptions it
 * allowed within the same few seconds: membership-recheck.ts reads each user/workspace pair open
 * subscriptions rely on again once their last read is that old, and ends them as an event would.
 */
export class AccessControl {
  readonly #holders = new Map<string, Set<AccessHolder>>()
  readonly #cache: ExpiringMap<string, Principal>
  /**
   * `userId workspaceId` of membership reads still trusted, with when the read began; members only
   * (a refusal is read again).
   */
  readonly #members: ExpiringMap<string, number>
  readonly #rechecks: MembershipRecheck
  readonly #now: () => number
  #recheckFailureLoggedAt = -Infinity
  readonly #recent: { generation: number; event: AccessEvent }[] = []
  /** Bumped by every event: a lookup that began before one is not cached. */
  #generation = 0
  #listening: AsyncIterableIterator<AccessEvent> | undefined

  constructor(private readonly deps: AccessControlDeps) {
    this.#now = deps.now ?? (() => performance.now())
    const cache = { ttlMs: deps.cacheMs ?? 5_000, max: deps.maxCached ?? 10_000, now: this.#now }
    this.#cache = new ExpiringMap(cache)
    this.#members = new ExpiringMap(cache)
    this.#rechecks = new MembershipRecheck({
      boundMs: cache.ttlMs,
      now: this.#now,
      timers: deps.timers ?? realScheduler,
      read: (userId, workspaceId) => this.isMember(userId, workspaceId, { fresh: true }),
      // Found gone: applied here as the event the API would have published (every instance reads for itself).
      gone: (userId, workspaceId) => this.apply({ type: 'membership-removed', userId, workspaceId }),
      failed: (error) => this.#recheckFailed(error),
    })
  }

  get generation(): number {
    return this.#generation
  }

  /** Holders registered now (tests prove every way an owner ends frees its entry). */
  get heldCount(): number {
    let count = 0
    for (const set of this.#holders.values()) count += set.size
    return count
  }

  /** User/workspace pairs whose membership open subscriptions rely on, and whether their timer is armed. */
  get rechecks(): { pairs: number; armed: boolean } {
    return { pairs: this.#rechecks.size, armed: this.#rechecks.armed }
  }

  /** The caller of a bearer token, or null. `fresh` reads the database whatever is cached (mutations). */
  principal(token: string | undefined, options: { fresh?: boolean } = {}): Promise<Principal | null> {
    return token ? this.principalByHash(hashToken(token), options) : Promise.resolve(null)
  }

  async principalByHash(tokenHash: string, { fresh = false }: { fresh?: boolean } = {}): Promise<Principal | null> {
    const cached = this.#cache.get(tokenHash)
    if (!fresh && cached) return cached
    const generation = this.#generation
    const principal = await this.deps.lookup(tokenHash)
    this.#cache.delete(tokenHash)
    // A revocation applied while the read was in flight may postdate what it read: not cached.
    if (principal && generation === this.#generation) {
      this.#cache.set(tokenHash, principal)
    }
    return principal
  }

  /**
   * Whether the user is a member of the workspace, for every subscribe and request that checks it.
   * A membership read is kept like a caller (until an event removes it, a gap, or `cacheMs`), so
   * ten thousand browsers opening a workspace's feed cost one read, not ten thousand; a refusal is
   * not kept, so a member just added gets in at once. `fresh` reads the database whatever is cached.
   */
  async isMember(userId: string, workspaceId: string, { fresh = false }: { fresh?: boolean } = {}): Promise<boolean> {
    const key = `${userId} ${workspaceId}`
    if (!fresh && this.#members.get(key) !== undefined) return true
    const generation = this.#generation
    const readAt = this.#now()
    const member = await this.deps.isMember(userId, workspaceId)
    this.#members.delete(key)
    if (member && generation === this.#generation) {
      this.#members.set(key, readAt)
      // Any read counts for open subscriptions too: theirs waits a bound from this one.
      this.#rechecks.confirmed(userId, workspaceId, readAt)
    }
    return member
  }

  /**
   * Registers something open; returns its release (call it on every way the holder ends). `since`
   * is the generation read before its access was checked: an event applied after that ends it at
   * once, so a revocation racing the check is not missed.
   */
  hold(holder: AccessHolder, since = this.#generation): () => void {
    let set = this.#holders.get(holder.userId)
    if (!set) this.#holders.set(holder.userId, (set = new Set()))
    set.add(holder)
    // The check it passed read the cached membership (or, not cached, read it just now).
    if (holder.workspaceId !== undefined)
      this.#rechecks.track(holder.userId, holder.workspaceId, this.#members.get(`${holder.userId} ${holder.workspaceId}`) ?? this.#now())
    const release = () => this.#release(holder)
    if (since < this.#generation)
      for (const { generation, event } of this.#recent) if (generation > since && this.#ends(event, holder)) this.#end(holder, event)
    return release
  }

  /** Applies the event here at once, then tells every other instance. */
  async publish(event: AccessEvent): Promise<void> {
    this.apply(event)
    await this.deps.pubsub.publish('access', 'all', event)
  }

  apply(event: AccessEvent): void {
    this.#generation++
    if (event.type === 'resync') return this.#resync()
    this.#recent.push({ generation: this.#generation, event })
    if (this.#recent.length > RECENT_EVENTS) this.#recent.shift()
    if (event.type === 'credentials-revoked')
      this.#cache.deleteWhere((principal, hash) => principal.userId === event.userId && hash !== event.keepTokenHash)
    if (event.type === 'membership-removed') this.#members.delete(`${event.userId} ${event.workspaceId}`)
    for (const holder of [...(this.#holders.get(event.userId) ?? [])]) if (this.#ends(event, holder)) this.#end(holder, event)
  }

  /** Follows the other instances' events (this instance's own come back too; applying twice ends nothing new). */
  start(): void {
    const events = this.deps.pubsub.subscribe('access', 'all', { bufferLimit: 10_000, onOverflow: () => ({ type: 'resync' }) })
    this.#listening = events
    void (async () => {
      for await (const event of events) this.apply(event)
    })().catch((error: unknown) => this.deps.logger.error({ err: error, action: 'access.listen' }, 'following access events failed'))
  }

  async stop(): Promise<void> {
    this.#rechecks.stop()
    await this.#listening?.return?.()
    this.#listening = undefined
  }

  #ends(event: AccessEvent, holder: AccessHolder): boolean {
    if (event.type === 'credentials-revoked')
      return holder.userId === event.userId && (event.keepTokenHash === undefined || holder.tokenHash !== event.keepTokenHash)
    if (event.type === 'membership-removed') return holder.userId === event.userId && holder.workspaceId === event.workspaceId
    return false
  }

  #end(holder: AccessHolder, event: AccessEvent): void {
    if (!this.#release(holder)) return
    try {
      holder.end(event.type === 'membership-removed' ? 'membership' : 'credentials')
    } catch (error) {
      this.deps.logger.error({ err: error, action: 'access.end' }, 'ending a revoked holder failed')
    }
  }

  #release(holder: AccessHolder): boolean {
    const set = this.#holders.get(holder.userId)
    if (!set?.delete(holder)) return false
    if (set.size === 0) this.#holders.delete(holder.userId)
    if (holder.workspaceId !== undefined) this.#rechecks.untrack(holder.userId, holder.workspaceId)
    return true
  }

  /**
   * Events may have been missed: nothing cached is trusted, and every holder is checked again (its
   * token here, its membership by the re-checks, one read per user/workspace pair).
   */
  #resync(): void {
    this.#cache.clear()
    this.#members.clear()
    const holders = [...this.#holders.values()].flatMap((set) => [...set])
    this.deps.logger.warn({ holders: holders.length, action: 'access.resync' }, 'access events may have been missed; re-checking open holders')
    this.#rechecks.recheckAll()
    void this.#recheckTokens(holders).catch((error: unknown) =>
      this.deps.logger.error({ err: error, action: 'access.resync' }, 're-checking access after a pub/sub gap failed'),
    )
  }

  async #recheckTokens(holders: AccessHolder[]): Promise<void> {
    const byToken = new Map<string, Promise<Principal | null>>()
    for (const holder of holders) {
      if (holder.tokenHash === undefined) continue
      let lookup = byToken.get(holder.tokenHash)
      if (!lookup) byToken.set(holder.tokenHash, (lookup = this.deps.lookup(holder.tokenHash)))
      if (!(await lookup)) this.#end(holder, { type: 'credentials-revoked', userId: holder.userId })
    }
  }

  /** The database did not answer a re-check: nothing ends for an outage (it is tried again shortly); logged once a minute at most. */
  #recheckFailed(error: unknown): void {
    const now = this.#now()
    if (now - this.#recheckFailureLoggedAt < RECHECK_FAILURE_LOG_MS) return
    this.#recheckFailureLoggedAt = now
    this.deps.logger.warn({ err: error, action: 'access.recheck' }, 're-checking the memberships of open subscriptions failed; trying again shortly')
  }
}
