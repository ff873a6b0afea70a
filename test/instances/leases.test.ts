// Session ownership in the database, on PostgreSQL with two connections racing as two instances
// would; lease times move by a manual clock, never by waiting.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { claimSession, ownerOf, registerInstance, renewInstance, takeOverExpiredSessions } from '../../src/store/instances.ts'
import { startTurn } from '../../src/store/turns.ts'
import { recoverAfterRestart } from '../../src/recovery/startup-recovery.ts'
import type { Store } from '../../src/store/store.ts'
import { InstanceLease, type LeaseHooks } from '../../src/instances/instance-lease.ts'

const LEASE = 10_000

describe('session ownership (postgres)', () => {
  let w: ProjectorWorld
  let other: Store
  beforeEach(async () => {
    w = await projectorWorld('postgres')
    other = (await w.otherInstance()).store
  })
  afterEach(() => w?.close())

  async function ownedRunningSession(owner: string) {
    const task = await w.newTask()
    const sessionId = await w.newSession(task.id, { state: 'RUNNING' })
    await w.store.db.session.update({ where: { id: sessionId }, data: { ownerInstanceId: owner } })
    await startTurn(w.store, { sessionId })
    return sessionId
  }

  it('a lease renews while it holds and not once it has lapsed', async () => {
    await registerInstance(w.store, 'A', LEASE)
    w.clock.advance(LEASE - 1)
    expect(await renewInstance(w.store, 'A', LEASE)).toBe(true)
    w.clock.advance(LEASE)
    expect(await renewInstance(w.store, 'A', LEASE)).toBe(false)
  })

  it('of concurrent claims on a dead owner’s session exactly one succeeds, and only against the owner read', async () => {
    await registerInstance(w.store, 'A', LEASE)
    const sessionId = await ownedRunningSession('A')
    w.clock.advance(LEASE + 1)
    expect((await ownerOf(w.store, sessionId))?.ownerLive).toBe(false)
    const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => claimSession(i % 2 ? other : w.store, sessionId, `claimer-${i}`, 'A')))
    expect(claims.filter(Boolean)).toHaveLength(1)
    const winner = `claimer-${claims.indexOf(true)}`
    expect((await ownerOf(w.store, sessionId))?.ownerInstanceId).toBe(winner)
    // A claim that read an owner which has changed since fails.
    expect(await claimSession(w.store, sessionId, 'late', 'A')).toBe(false)
  })

  it('two instances taking over a dead instance at once split its sessions: each goes to exactly one, and the dead row is forgotten', async () => {
    await registerInstance(w.store, 'A', LEASE)
    const ids = []
    for (let i = 0; i < 20; i++) ids.push(await ownedRunningSession('A'))
    w.clock.advance(LEASE + 1)
    await registerInstance(w.store, 'B', LEASE)
    await registerInstance(w.store, 'C', LEASE)
    const [b, c] = await Promise.all([takeOverExpiredSessions(w.store, 'B'), takeOverExpiredSessions(other, 'C')])
    const won = [...b.claimed, ...c.claimed].map((s) => s.id)
    expect(won.sort()).toEqual([...ids].sort())
    expect(new Set(won).size).toBe(ids.length)
    expect(await w.store.db.serverInstance.findUnique({ where: { id: 'A' } })).toBeNull()
    // Nothing is left to take.
    expect((await takeOverExpiredSessions(w.store, 'B')).claimed).toEqual([])
  })

  it('sessions of a live instance are never taken over, whatever their state', async () => {
    await registerInstance(w.store, 'A', LEASE)
    const sessionId = await ownedRunningSession('A')
    w.clock.advance(LEASE - 1)
    await registerInstance(w.store, 'B', LEASE)
    expect((await takeOverExpiredSessions(w.store, 'B', { unowned: true })).claimed).toEqual([])
    expect((await ownerOf(w.store, sessionId))?.ownerInstanceId).toBe('A')
  })

  function leaseWith(running: string[] = []) {
    const calls: string[] = []
    const hooks: LeaseHooks = {
      runningSessions: () => running,
      abandon: async (ids) => void calls.push(`abandon:${ids.join(',')}`),
      leaseLost: async () => void calls.push('leaseLost'),
      recoverOwned: async () => void calls.push('recoverOwned'),
      afterRenewal: async () => void calls.push('afterRenewal'),
    }
    const lease = new InstanceLease('me', { store: w.store, logger: pino({ level: 'silent' }), leaseMs: LEASE, hooks, monotonic: () => w.clock.now().getTime() })
    return { lease, calls }
  }

  it('a heartbeat renews and then looks for expired instances; a lapsed lease ends every agent here first, then is taken anew', async () => {
    const { lease, calls } = leaseWith()
    await lease.register()
    w.clock.advance(LEASE - 1)
    await lease.tick()
    expect(calls).toEqual(['afterRenewal'])
    expect(lease.valid).toBe(true)
    w.clock.advance(LEASE + 1)
    expect(lease.valid).toBe(false)
    await lease.tick()
    expect(calls).toEqual(['afterRenewal', 'leaseLost', 'recoverOwned'])
    expect(lease.valid).toBe(true)
    expect(await renewInstance(w.store, 'me', LEASE)).toBe(true)
  })

  it('a heartbeat ends here the agents of sessions another instance owns now', async () => {
    const sessionId = await ownedRunningSession('me')
    const { lease, calls } = leaseWith([sessionId])
    await lease.register()
    await lease.tick()
    expect(calls).toEqual(['afterRenewal'])
    await w.store.db.session.update({ where: { id: sessionId }, data: { ownerInstanceId: 'someone-else' } })
    await lease.tick()
    expect(calls).toEqual(['afterRenewal', `abandon:${sessionId}`, 'afterRenewal'])
  })

  it('startup recovery resets the session of an expired owner and leaves a live owner’s turn running', async () => {
    await registerInstance(w.store, 'live', LEASE)
    await registerInstance(w.store, 'dead', LEASE)
    w.clock.advance(LEASE - 1)
    await renewInstance(w.store, 'live', LEASE)
    const running = await ownedRunningSession('live')
    const stranded = await ownedRunningSession('dead')
    w.clock.advance(2)
    await registerInstance(w.store, 'new', LEASE)
    const result = await recoverAfterRestart({
      store: w.store,
      projector: w.projector,
      logger: pino({ level: 'silent' }),
      resumableProfiles: new Set(['mock']),
      instanceId: 'new',
    })
    expect(result.resumed).toBe(1)
    const live = await w.store.db.session.findUniqueOrThrow({ where: { id: running }, include: { turns: true } })
    expect([live.state, live.ownerInstanceId, live.turns.map((t) => t.completedAt)]).toEqual(['RUNNING', 'live', [null]])
    const taken = await w.store.db.session.findUniqueOrThrow({ where: { id: stranded }, include: { turns: true } })
    expect([taken.state, taken.ownerInstanceId, taken.turns.map((t) => t.interrupted)]).toEqual(['WAITING_FOR_INPUT', 'new', [true]])
  })
})
