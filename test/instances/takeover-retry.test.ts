// A takeover claims an expired instance's sessions in one statement and recovers them after it:
// once the claim has committed no later pass finds those sessions again, so a recovery the
// database refused for now (a lock wait past lock_timeout, a blip) must be tried again, or the
// sessions stay RUNNING with a turn open and no agent anywhere (issue 44, item 1). Real PostgreSQL;
// the refusal is injected, as the driver adapter passes a lock wait past lock_timeout on; lease
// times move by a manual clock.
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import type { Db } from '../../src/store/db.ts'
import { registerInstance } from '../../src/store/instances.ts'
import { startTurn } from '../../src/store/turns.ts'
import { takeOverExpired } from '../../src/instances/takeover.ts'

const LEASE = 10_000

describe('a takeover whose recovery the database refuses at first (postgres)', () => {
  let w: ProjectorWorld
  beforeEach(async () => (w = await projectorWorld('postgres')))
  afterEach(() => w?.close())

  it('recovers the claimed sessions on a later attempt: the cut turn closes interrupted, the session waits for input', async () => {
    await registerInstance(w.store, 'dead', LEASE)
    const task = await w.newTask()
    const sessionId = await w.newSession(task.id, { state: 'RUNNING' })
    await w.store.db.session.update({ where: { id: sessionId }, data: { ownerInstanceId: 'dead' } })
    const turn = await startTurn(w.store, { sessionId })
    w.clock.advance(LEASE + 1)
    await registerInstance(w.store, 'survivor', LEASE)

    // Recovery's first read (the claimed sessions, by id) is refused once.
    const refused: string[] = []
    const store = { ...w.store, db: refusingOnce(w.store.db, (args) => args?.where?.id !== undefined, refused) }
    const { claimed } = await takeOverExpired({ store, logger: pino({ level: 'silent' }), resumableProfiles: new Set(['mock']), instanceId: 'survivor', reason: 'lease' })

    expect(refused).toEqual(['session.findMany'])
    expect(claimed.map((s) => s.id)).toEqual([sessionId])
    expect(await w.store.db.session.findUniqueOrThrow({ where: { id: sessionId }, select: { state: true, ownerInstanceId: true } })).toEqual({
      state: 'WAITING_FOR_INPUT',
      ownerInstanceId: 'survivor',
    })
    expect(await w.store.db.turn.findUniqueOrThrow({ where: { id: turn.id }, select: { interrupted: true, completedAt: true } })).toMatchObject({ interrupted: true })
  })
})

/** The client, whose first `session.findMany` matching `when` fails as a statement cut by lock_timeout does. */
function refusingOnce(db: Db, when: (args: { where?: { id?: unknown } } | undefined) => boolean, refused: string[]): Db {
  const lockTimeout = () =>
    Object.assign(new Error('canceling statement due to lock timeout'), { name: 'DriverAdapterError', cause: { kind: 'postgres', originalCode: '55P03' } })
  const session = new Proxy(db.session, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown
      if (prop === 'findMany')
        return (args: Parameters<Db['session']['findMany']>[0]) => {
          if (refused.length > 0 || !when(args)) return target.findMany(args)
          refused.push('session.findMany')
          return Promise.reject(lockTimeout())
        }
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value
    },
  })
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'session') return session
      const value = Reflect.get(target, prop) as unknown
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value
    },
  })
}
