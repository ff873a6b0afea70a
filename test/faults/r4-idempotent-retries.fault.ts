// R4 (docs/performance.md): 100 concurrent retries of one clientMessageId over three real
// instances, for a session the first of them runs. The id makes addMessage idempotent across
// processes: one stored message, one prompt dispatched to the one agent, every call answered with
// that message.
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { instanceCluster } from '../support/instance-cluster.ts'
import type { Instance } from '../support/instances.ts'
import { addMessage, agentSaid, newTask, session, settled, startSession } from '../support/instance-sessions.ts'
import { openStore } from '../support/summary-rebuild.ts'
import { eventually } from '../support/wait.ts'
import type { Store } from '../../src/store/store.ts'

const RETRIES = 100
const MAX_ATTEMPTS = 20

describe('R4: 100 concurrent retries of one clientMessageId over three instances', () => {
  const cluster = instanceCluster(['A', 'B', 'C'], { RATE_LIMIT_MUTATIONS: '0', LOG_LEVEL: 'warn' })
  let store: Store
  let instances: Instance[]

  beforeAll(async () => {
    instances = cluster.instances
    store = await openStore(cluster.databaseUrl)
  })
  afterAll(async () => {
    await store?.db.$disconnect()
  })

  it('store one message, dispatch one prompt to the agent, and answer every call with that message', async () => {
    const [a, b] = instances as [Instance, Instance, Instance]
    const taskId = await newTask(a)
    const sessionId = await startSession(a, taskId)
    const clientMessageId = randomUUID()

    // A real client sends the same id again when answered UNAVAILABLE (nothing done, try again).
    const send = async (instance: Instance) => {
      for (let attempt = 1; ; attempt++) {
        const result = await addMessage(instance, taskId, sessionId, 'exactly once', clientMessageId)
        if (attempt === MAX_ATTEMPTS || result.errors?.[0]?.extensions?.code !== 'UNAVAILABLE') return result
        await new Promise((r) => setTimeout(r, 20 * attempt))
      }
    }
    const results = await Promise.all(Array.from({ length: RETRIES }, (_, i) => send(instances[i % instances.length]!)))

    expect(results.flatMap((r) => r.errors ?? [])).toEqual([])
    // A user message's id is the client's: every answer names the one message.
    expect(new Set(results.map((r) => r.data?.addMessage.message.id))).toEqual(new Set([clientMessageId]))
    expect(results.filter((r) => r.data?.addMessage.replayed === false)).toHaveLength(1)
    expect(results.every((r) => r.data?.addMessage.message.content === 'exactly once')).toBe(true)

    // In the database: one row for the id, and one conversational turn (one dispatch) in the session.
    expect(await store.db.message.count({ where: { clientMessageId } })).toBe(1)
    await eventually(async () => settled(await session(b, sessionId)))
    const turns = await store.db.turn.findMany({ where: { sessionId, lifecycleOnly: false } })
    expect(turns.map((t) => ({ completed: t.completedAt !== null, interrupted: t.interrupted }))).toEqual([{ completed: true, interrupted: false }])

    // And the agent's own count: `count` is its second prompt, so it received the retried one once.
    expect((await addMessage(b, taskId, sessionId, 'count')).errors).toBeUndefined()
    const final = await eventually(async () => {
      const s = await session(b, sessionId)
      return settled(s) && agentSaid(s).length === 2 && s
    })
    expect(agentSaid(final)).toEqual(['echo: exactly once', 'prompts received: 2'])
    expect(final.messages.filter((m) => m.author === 'USER').map((m) => [m.id, m.content])).toEqual([
      [clientMessageId, 'exactly once'],
      [expect.any(String), 'count'],
    ])
    expect(instances.map((i) => i.agents())).toEqual([1, 0, 0])
  })
})
