import { rmSync } from 'node:fs'
import path from 'node:path'
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { GitMonitor } from '../../src/git/monitor.ts'
import { gitOfSessions } from '../../src/store/sessions.ts'
import { projectorWorld, type ProjectorWorld } from '../support/projector-harness.ts'
import { gitRepo } from '../support/git-repo.ts'

describe('Git monitor (real repositories, injected clock)', () => {
  let w: ProjectorWorld
  let now: number
  beforeEach(async () => {
    w = await projectorWorld('sqlite')
    now = 0
  })
  afterEach(() => w?.close())

  async function twoRepoTask() {
    const web = gitRepo({ 'a.txt': 'a\n' })
    const api = gitRepo({ 'b.txt': 'b\n' })
    const task = await w.store.db.task.create({
      data: {
        workspaceId: w.workspaceId,
        workflowStepId: (await w.store.db.workflowStep.findFirstOrThrow({ where: { workspaceId: w.workspaceId } })).id,
        title: 'two repos',
        createdAt: w.clock.now(),
        updatedAt: w.clock.now(),
        lastActivityAt: w.clock.now(),
        repositories: {
          create: [
            { position: 0, name: 'acme/web', localPath: web.dir, baseBranch: 'main' },
            { position: 1, name: 'acme/api', localPath: api.dir, baseBranch: 'main' },
          ],
        },
      },
      include: { repositories: { orderBy: { position: 'asc' } } },
    })
    const sessionId = await w.newSession(task.id, { state: 'RUNNING' })
    const monitor = new GitMonitor({ store: w.store, pubsub: w.pubsub, logger: pino({ level: 'silent' }), liveSessions: () => [sessionId], now: () => now })
    return { task, web, api, sessionId, monitor }
  }

  it('keeps the other repository’s totals when one repository of a two-repository task changes', async () => {
    const { task, web, api, sessionId, monitor } = await twoRepoTask()
    web.write('a.txt', 'a\nb\nc\n')
    api.write('new.txt', 'x\n')
    await monitor.observeSession(sessionId)
    expect((await w.summary(task.id)).payload.git).toEqual({ additions: 3, deletions: 0, changedFiles: 2, ahead: 0, behind: 0, comparisonUnavailable: false })
    web.write('a.txt', 'a\n') // web is clean again; api unchanged
    await monitor.observeSession(sessionId)
    expect((await w.summary(task.id)).payload.git).toMatchObject({ additions: 1, changedFiles: 1 })
  })

  it('GIVEN an idle task whose Git tree changes, THEN updatedAt advances while lastActivityAt stays', async () => {
    const { task, web, sessionId, monitor } = await twoRepoTask()
    const before = await w.summary(task.id)
    w.clock.advance(60_000)
    web.write('a.txt', 'changed\n')
    await monitor.observeSession(sessionId)
    const after = await w.summary(task.id)
    expect(after.revision).toBeGreaterThan(before.revision)
    expect(after.updatedAt.getTime()).toBeGreaterThan(before.updatedAt.getTime())
    expect(after.payload.lastActivityAt).toBe(before.payload.lastActivityAt)
  })

  it('coalesces: an unchanged tree writes and publishes nothing', async () => {
    const { task, web, sessionId, monitor } = await twoRepoTask()
    web.write('a.txt', 'changed\n')
    await monitor.observeSession(sessionId)
    const [first] = await gitOfSessions(w.store, [sessionId])
    const revision = (await w.summary(task.id)).revision
    w.clock.advance(10_000)
    await monitor.observeSession(sessionId)
    const [second] = await gitOfSessions(w.store, [sessionId])
    expect(second!.observedAt).toEqual(first!.observedAt)
    expect((await w.summary(task.id)).revision).toBe(revision)
  })

  it('keeps the last good totals and sets comparisonUnavailable when a run fails or the base is gone', async () => {
    const { task, web, api, sessionId, monitor } = await twoRepoTask()
    web.write('a.txt', 'a\nb\n')
    await monitor.observeSession(sessionId)
    rmSync(path.join(web.dir, '.git'), { recursive: true, force: true })
    await monitor.observeSession(sessionId)
    expect((await w.summary(task.id)).payload.git).toEqual({ additions: 1, deletions: 0, changedFiles: 1, ahead: 0, behind: 0, comparisonUnavailable: true })
    api.git('branch', '-m', 'main', 'trunk') // the base of the other repository disappears
    await monitor.observeSession(sessionId)
    expect((await w.summary(task.id)).payload.git?.comparisonUnavailable).toBe(true)
  })

  it('polls every running session on the slow baseline and focused sessions on the fast interval', async () => {
    const { web, sessionId, monitor } = await twoRepoTask()
    await monitor.tick() // t=0: first observation
    const runs = () => monitor.observations
    const afterFirst = runs()
    expect(afterFirst).toBe(2) // two repositories
    now = monitor.fastMs
    await monitor.tick()
    expect(runs()).toBe(afterFirst) // not focused: waits for the slow interval
    monitor.focus('connection-1', sessionId)
    await monitor.tick()
    expect(runs()).toBe(afterFirst + 2)
    monitor.unfocus('connection-1')
    now += monitor.fastMs
    await monitor.tick()
    expect(runs()).toBe(afterFirst + 2)
    now = monitor.slowMs + monitor.fastMs
    web.write('a.txt', 'z\n')
    await monitor.tick()
    expect(runs()).toBe(afterFirst + 4)
  })
})
