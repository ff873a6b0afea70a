// Subagents and background work live in an agent process: after a restart or a takeover no agent
// carries them any more, whatever state their session was left in, so recovery ends them and the
// summaries stop showing BACKGROUND (issue 31: "the spinner that never stops").
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { recoverAfterRestart, recoverSessions } from '../../src/recovery/startup-recovery.ts'
import { registerInstance, renewInstance } from '../../src/store/instances.ts'
import { takeOverExpired } from '../../src/instances/takeover.ts'
import { updateSession } from '../../src/store/sessions.ts'

const logger = pino({ level: 'silent' })
const LEASE = 10_000

describe.each(PROVIDERS)('recovery ends activity no agent carries (%s)', (provider) => {
  let w: ProjectorWorld
  beforeEach(async () => (w = await projectorWorld(provider)))
  afterEach(() => w?.close())

  /** A session as a dead process left it: its agent had subagents (or background work) running. */
  async function withSubagents(state: 'WAITING_FOR_INPUT' | 'RUNNING' | 'CANCELLED', activity: { activeSubagentCount?: number; backgroundWork?: boolean }, owner?: string) {
    const task = await w.newTask()
    const sessionId = await w.newSession(task.id, { state })
    if (owner) await w.store.db.session.update({ where: { id: sessionId }, data: { ownerInstanceId: owner } })
    await updateSession(w.store, sessionId, activity)
    return { taskId: task.id, sessionId }
  }
  const row = (id: string) => w.store.db.session.findUniqueOrThrow({ where: { id }, select: { state: true, activeSubagentCount: true, backgroundWork: true } })

  it('recoverSessions clears the subagents and background work of waiting and stopped sessions too, keeps their state, and the summaries re-derive', async () => {
    const waiting = await withSubagents('WAITING_FOR_INPUT', { activeSubagentCount: 1 })
    const background = await withSubagents('WAITING_FOR_INPUT', { backgroundWork: true })
    const running = await withSubagents('RUNNING', { activeSubagentCount: 2 })
    const stopped = await withSubagents('CANCELLED', { activeSubagentCount: 1, backgroundWork: true })
    expect((await w.summary(waiting.taskId)).payload).toMatchObject({ foregroundActivity: 'BACKGROUND', activeSubagentCount: 1 })
    expect((await w.summary(background.taskId)).payload).toMatchObject({ foregroundActivity: 'BACKGROUND' })
    expect((await w.summary(running.taskId)).payload).toMatchObject({ foregroundActivity: 'GENERATING', activeSubagentCount: 2 })

    const all = [waiting, background, running, stopped]
    const result = await recoverSessions({ store: w.store, logger, resumableProfiles: new Set(['mock']) }, all.map((s) => ({ id: s.sessionId, agentProfile: 'mock' })), 'SERVER_RESTART')
    expect(result).toMatchObject({ resumed: 1, failed: 0, clearedActivity: 3 })

    expect(await row(waiting.sessionId)).toEqual({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 0, backgroundWork: false })
    expect(await row(background.sessionId)).toEqual({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 0, backgroundWork: false })
    expect(await row(running.sessionId)).toEqual({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 0, backgroundWork: false })
    expect(await row(stopped.sessionId)).toEqual({ state: 'CANCELLED', activeSubagentCount: 0, backgroundWork: false })
    for (const s of all) expect((await w.summary(s.taskId)).payload).toMatchObject({ foregroundActivity: null, activeSubagentCount: 0 })
  })

  if (provider === 'sqlite')
    it('startup recovery of the file’s only server clears a waiting session whose agent ran a background subagent, with no open turn', async () => {
      const waiting = await withSubagents('WAITING_FOR_INPUT', { activeSubagentCount: 1 }, 'old-process')
      await registerInstance(w.store, 'old-process', LEASE)
      await registerInstance(w.store, 'new', LEASE)
      // The old process's lease has not run out: the SQLite lock alone proves it is gone.
      await recoverAfterRestart({ store: w.store, projector: w.projector, logger, resumableProfiles: new Set(['mock']), instanceId: 'new', exclusive: true })
      expect(await row(waiting.sessionId)).toEqual({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 0, backgroundWork: false })
      expect((await w.summary(waiting.taskId)).payload).toMatchObject({ foregroundActivity: null, activeSubagentCount: 0 })
    })
  else
    it('startup recovery and a takeover clear the activity of an expired owner’s waiting sessions and leave a live owner’s', async () => {
      await registerInstance(w.store, 'live', LEASE)
      await registerInstance(w.store, 'dead', LEASE)
      await registerInstance(w.store, 'dead-later', LEASE)
      const alive = await withSubagents('WAITING_FOR_INPUT', { activeSubagentCount: 1 }, 'live')
      const stranded = await withSubagents('WAITING_FOR_INPUT', { activeSubagentCount: 1, backgroundWork: true }, 'dead')
      const later = await withSubagents('WAITING_FOR_INPUT', { activeSubagentCount: 3 }, 'dead-later')
      w.clock.advance(LEASE - 1)
      await renewInstance(w.store, 'live', LEASE)
      await renewInstance(w.store, 'dead-later', LEASE)
      w.clock.advance(2)
      await registerInstance(w.store, 'new', LEASE)
      await recoverAfterRestart({ store: w.store, projector: w.projector, logger, resumableProfiles: new Set(['mock']), instanceId: 'new' })
      expect(await row(stranded.sessionId)).toEqual({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 0, backgroundWork: false })
      expect((await w.summary(stranded.taskId)).payload).toMatchObject({ foregroundActivity: null, activeSubagentCount: 0 })
      expect(await row(later.sessionId)).toMatchObject({ activeSubagentCount: 3 })
      expect(await row(alive.sessionId)).toMatchObject({ activeSubagentCount: 1 })

      // The other owner's lease lapses: the takeover clears its sessions' activity before it returns.
      expect(await renewInstance(w.store, 'live', LEASE)).toBe(true)
      w.clock.advance(LEASE - 1)
      const { claimed } = await takeOverExpired({ store: w.store, logger, resumableProfiles: new Set(['mock']), instanceId: 'new', reason: 'lease' })
      expect(claimed.map((s) => s.id)).toEqual([later.sessionId])
      expect(await row(later.sessionId)).toEqual({ state: 'WAITING_FOR_INPUT', activeSubagentCount: 0, backgroundWork: false })
      expect((await w.summary(later.taskId)).payload).toMatchObject({ foregroundActivity: null, activeSubagentCount: 0 })
      expect(await row(alive.sessionId)).toMatchObject({ activeSubagentCount: 1 })
    })
})
