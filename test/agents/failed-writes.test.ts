import { randomUUID } from 'node:crypto'
import { pino } from 'pino'
import { Registry } from 'prom-client'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createAgentMetrics } from '../../src/agents/agent-metrics.ts'
import type { Scheduler } from '../../src/util/scheduler.ts'
import { agentProfiles } from '../../src/agents/profiles.ts'
import { WRITE_RETRY_DELAYS_MS } from '../../src/util/retry-write.ts'
import { SessionService } from '../../src/agents/session-service.ts'
import { createMemoryPubSub } from '../../src/pubsub/memory.ts'
import { connectDatabase, type Db } from '../../src/store/db.ts'
import { createTask } from '../../src/store/tasks.ts'
import { createUserWithToken } from '../../src/store/users.ts'
import { createWorkspace } from '../../src/store/workspaces.ts'
import { migratedDatabase } from '../support/databases.ts'
import { eventually } from '../support/wait.ts'
import { failingStore } from './failing-store.ts'
import { wholeContents } from '../../src/store/message-content.ts'

/** Timers run on the next macrotask whatever their delay; the delays asked for are recorded. */
function instantScheduler() {
  const delays: number[] = []
  const scheduler: Scheduler = {
    setTimeout(fn, ms) {
      delays.push(ms)
      return setImmediate(fn)
    },
    clearTimeout: (handle) => clearImmediate(handle as NodeJS.Immediate),
  }
  return { scheduler, delays }
}

describe('a failed store write never leaves a session that accepts prompts nobody dispatches (sqlite, real mock agent)', () => {
  let db: Db
  let harness: ReturnType<typeof failingStore>
  let service: SessionService
  let time: ReturnType<typeof instantScheduler>
  let workspaceId: string

  beforeAll(async () => {
    db = await connectDatabase('sqlite', await migratedDatabase('sqlite'))
    harness = failingStore(db)
    time = instantScheduler()
    service = new SessionService({
      store: harness.store,
      pubsub: createMemoryPubSub(),
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
      metrics: createAgentMetrics(new Registry()),
      profiles: agentProfiles({}),
      scheduler: time.scheduler,
    })
    const { user } = await createUserWithToken(db, 'owner')
    workspaceId = (await createWorkspace(harness.store, 'W', user.id)).id
  })
  afterEach(() => {
    expect(harness.failed.length, 'every injected failure was hit').toBeGreaterThan(0)
    harness.failed.length = 0
  })
  afterAll(async () => {
    await service.shutdown()
    await db.$disconnect()
  })

  const newSession = async () => {
    const task = await createTask(harness.store, { workspaceId, title: 't', repositories: [] })
    const session = await service.startSession({ taskId: task.id, agentProfile: 'mock' })
    return { taskId: task.id, sessionId: session.id }
  }
  const send = (s: { taskId: string; sessionId: string }, content: string) =>
    service.acceptPrompt({ ...s, clientMessageId: randomUUID(), content })
  const replies = async (sessionId: string) =>
    (await wholeContents({ db }, await db.message.findMany({ where: { sessionId, author: 'AGENT', kind: 'MESSAGE' }, orderBy: { createdAt: 'asc' } }))).map((m) => m.content)
  const answered = (sessionId: string, reply: string) =>
    eventually(async () => {
      const turns = await db.turn.findMany({ where: { sessionId, lifecycleOnly: false } })
      return turns.every((t) => t.completedAt) && (await replies(sessionId)).includes(reply)
    })

  it('a dispatch write that fails once is retried with backoff and the prompt is answered', async () => {
    const s = await newSession()
    time.delays.length = 0
    harness.fail({ model: 'turn', method: 'updateManyAndReturn', when: (a) => a.data?.promptDispatchAttempted === true, times: 1 })
    await send(s, 'hello')
    await answered(s.sessionId, 'echo: hello')
    expect(harness.failed).toEqual(['turn.updateManyAndReturn'])
    expect(time.delays).toContain(WRITE_RETRY_DELAYS_MS[0])
  })

  it('a dispatch write that keeps failing ends the session FAILED with an error, and the next prompt is dispatched by a new agent', async () => {
    const s = await newSession()
    harness.fail({ model: 'turn', method: 'updateManyAndReturn', when: (a) => a.data?.promptDispatchAttempted === true, times: Infinity })
    await send(s, 'lost')
    const failed = await eventually(async () => {
      const row = await db.session.findUniqueOrThrow({ where: { id: s.sessionId } })
      return row.state === 'FAILED' && row
    })
    expect(failed.errorCode).toBe('prompt_dispatch_failed')
    expect(service.liveSessionIds()).not.toContain(s.sessionId)
    harness.lift()
    await send(s, 'again')
    await answered(s.sessionId, 'echo: again')
  })

  it('a crash whose error write fails still ends the runtime, so a later prompt relaunches the agent', async () => {
    const s = await newSession()
    harness.fail({ model: 'session', method: 'update', when: (a) => a.data?.errorCode === 'agent_crashed', times: Infinity })
    await send(s, JSON.stringify({ script: [{ crash: 3 }] }))
    await eventually(async () => (await db.session.findUniqueOrThrow({ where: { id: s.sessionId } })).state === 'FAILED')
    expect(service.liveSessionIds()).not.toContain(s.sessionId)
    harness.lift()
    await send(s, 'after the crash')
    await answered(s.sessionId, 'echo: after the crash')
  })

  it('a stop whose state write fails once is retried: the session is CANCELLED and the next prompt is answered', async () => {
    const s = await newSession()
    harness.fail({ model: 'session', method: 'update', when: (a) => a.data?.state === 'CANCELLED', times: 1 })
    expect((await service.stopSession(s.sessionId)).state).toBe('CANCELLED')
    expect(service.liveSessionIds()).not.toContain(s.sessionId)
    await send(s, 'resumed')
    await answered(s.sessionId, 'echo: resumed')
  })
})
