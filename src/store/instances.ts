// Server instances and the sessions they own. An instance's claim on its sessions holds while
// its lease has not expired; every check compares lease times with this instance's clock, so
// instances' clocks must agree to well within SESSION_LEASE_MS (NTP does).
import type { Store } from './store.ts'

/** States that claim a live agent process. */
export const LIVE_SESSION_STATES = ['STARTING', 'RUNNING']

/** Activity only an agent process carries (subagents, background work): stale once no agent runs for the session. */
export const AGENT_ACTIVITY = [{ activeSubagentCount: { not: 0 } }, { backgroundWork: true }]

export async function registerInstance(store: Store, id: string, leaseMs: number) {
  const now = store.now()
  await store.db.serverInstance.create({
    data: { id, startedAt: now, renewedAt: now, leaseExpiresAt: new Date(now.getTime() + leaseMs) },
  })
}

/**
 * One statement per interval, whatever the number of sessions. Only an unexpired lease is
 * renewed: once it has lapsed, other instances may have taken the sessions over, so the caller
 * must give up its agents instead (false).
 */
export async function renewInstance(store: Store, id: string, leaseMs: number): Promise<boolean> {
  const now = store.now()
  const { count } = await store.db.serverInstance.updateMany({
    where: { id, leaseExpiresAt: { gt: now } },
    data: { renewedAt: now, leaseExpiresAt: new Date(now.getTime() + leaseMs) },
  })
  return count === 1
}

/** After the lease lapsed: the instance's row again, with a fresh lease (the row may have been forgotten meanwhile). */
export async function reacquireInstance(store: Store, id: string, leaseMs: number) {
  const now = store.now()
  const lease = { renewedAt: now, leaseExpiresAt: new Date(now.getTime() + leaseMs) }
  await store.db.serverInstance.upsert({ where: { id }, create: { id, startedAt: now, ...lease }, update: lease })
}

/** Graceful shutdown: the lease ends now, so the next takeover pass of another instance takes the sessions at once. */
export async function expireInstance(store: Store, id: string) {
  await store.db.serverInstance.updateMany({ where: { id }, data: { leaseExpiresAt: new Date(0) } })
}

export interface SessionOwner {
  sessionId: string
  taskId: string
  agentProfile: string
  state: string
  ownerInstanceId: string | null
  /** The owner's lease is current: its agent may be running there. */
  ownerLive: boolean
}

/** Who runs the session's agent now; undefined when the session does not exist. */
export async function ownerOf(store: Store, sessionId: string): Promise<SessionOwner | undefined> {
  const session = await store.db.session.findUnique({
    where: { id: sessionId },
    select: { id: true, taskId: true, agentProfile: true, state: true, ownerInstanceId: true },
  })
  if (!session) return undefined
  const ownerLive = session.ownerInstanceId !== null && (await instanceIsLive(store, session.ownerInstanceId))
  return {
    sessionId: session.id,
    taskId: session.taskId,
    agentProfile: session.agentProfile,
    state: session.state,
    ownerInstanceId: session.ownerInstanceId,
    ownerLive,
  }
}

export async function instanceIsLive(store: Store, id: string): Promise<boolean> {
  const row = await store.db.serverInstance.findUnique({ where: { id }, select: { leaseExpiresAt: true } })
  return row !== null && row.leaseExpiresAt > store.now()
}

/**
 * Compare-and-set: the session becomes `me`'s only if its owner is still `expected` (read by the
 * caller together with the fact that its lease had expired). Of concurrent claimers exactly one
 * sees count 1.
 */
export async function claimSession(store: Store, sessionId: string, me: string, expected: string | null): Promise<boolean> {
  const { count } = await store.db.session.updateMany({
    where: { id: sessionId, ownerInstanceId: expected },
    data: { ownerInstanceId: me },
  })
  return count === 1
}

export interface ClaimedSession {
  id: string
  agentProfile: string
}

/**
 * Takes over every session whose owner's lease has expired, and (`unowned`, at startup) every
 * session left live by a server that predates ownership. Each row is updated by one instance
 * only, so the rows returned are exactly the sessions this instance won. Afterwards an expired
 * instance that owns nothing any more is forgotten.
 */
export async function takeOverExpiredSessions(
  store: Store,
  me: string,
  options: { unowned?: boolean } = {},
): Promise<{ claimed: ClaimedSession[]; expiredInstances: string[] }> {
  const now = store.now()
  const expired = (
    await store.db.serverInstance.findMany({ where: { leaseExpiresAt: { lte: now }, id: { not: me } }, select: { id: true } })
  ).map((i) => i.id)
  const candidates = [
    ...(expired.length > 0 ? [{ ownerInstanceId: { in: expired } }] : []),
    ...(options.unowned ? [{ ownerInstanceId: null, OR: [{ state: { in: LIVE_SESSION_STATES } }, ...AGENT_ACTIVITY] }] : []),
  ]
  if (candidates.length === 0) return { claimed: [], expiredInstances: expired }
  const claimed = await store.db.session.updateManyAndReturn({
    where: { OR: candidates },
    data: { ownerInstanceId: me },
    select: { id: true, agentProfile: true },
  })
  if (expired.length > 0) await forgetIdleInstances(store, expired)
  return { claimed, expiredInstances: expired }
}

/** Whether any instance but `me` has a row (expired or not). */
export async function otherInstancesExist(store: Store, me: string): Promise<boolean> {
  return (await store.db.serverInstance.findFirst({ where: { id: { not: me } }, select: { id: true } })) !== null
}

/** SQLite's lock proves no other server runs: every session left with live state or open work becomes this instance's. */
export async function takeOverAllSessions(store: Store, me: string, sessionIds: readonly string[]): Promise<void> {
  if (sessionIds.length === 0) return
  await store.db.session.updateMany({ where: { id: { in: [...sessionIds] } }, data: { ownerInstanceId: me } })
}

async function forgetIdleInstances(store: Store, expired: string[]) {
  const stillOwning = new Set(
    (
      await store.db.session.findMany({
        where: { ownerInstanceId: { in: expired } },
        select: { ownerInstanceId: true },
        distinct: ['ownerInstanceId'],
      })
    ).map((s) => s.ownerInstanceId),
  )
  const idle = expired.filter((id) => !stillOwning.has(id))
  if (idle.length > 0) await store.db.serverInstance.deleteMany({ where: { id: { in: idle }, leaseExpiresAt: { lte: store.now() } } })
}

/** Of the sessions whose agents run here, those another instance owns now (taken over while this one stalled). */
export async function sessionsLostBy(store: Store, me: string, running: readonly string[]): Promise<string[]> {
  if (running.length === 0) return []
  const rows = await store.db.session.findMany({
    where: { id: { in: [...running] }, NOT: { ownerInstanceId: me } },
    select: { id: true },
  })
  return rows.map((r) => r.id)
}

/** Sessions this instance owns that claim an agent, its activity, or have open work (after its lease lapsed and its agents ended). */
export function sessionsOwnedWithOpenWork({ db }: Store, me: string): Promise<ClaimedSession[]> {
  return db.session.findMany({
    where: { ownerInstanceId: me, OR: [{ state: { in: LIVE_SESSION_STATES } }, ...AGENT_ACTIVITY, { turns: { some: { completedAt: null } } }] },
    select: { id: true, agentProfile: true },
  })
}
