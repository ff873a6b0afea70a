// The runtime's queue lives in memory; the prompts queued in the store outlive it. A server that
// finds a session with stored queued prompts (its earlier process died with a turn in flight)
// relaunches the session's agent and fills the new runtime's queue from the store, in order; a
// prompt sent while that relaunch runs is accepted after them and goes out last.
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { stoppedServerWithSession } from '../support/fixtures.ts'
import { connectDatabase } from '../../src/store/db.ts'
import { createStore } from '../../src/store/store.ts'
import { insertPrompt } from '../../src/store/prompts.ts'
import { markPromptDispatched } from '../../src/store/turns.ts'
import {
  AddMessageDocument,
  SessionDetailDocument,
} from '../generated/graphql.ts'

describe('stored queued prompts fill a relaunched runtime (sqlite)', () => {
  const servers: TestServer[] = []
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()))
  })

  it('dispatches them once, in order, before a prompt sent during the relaunch', async () => {
    const { first, token, taskId, sessionId } = await stoppedServerWithSession(servers, 'queue')

    // What a process killed mid-turn leaves: a turn in flight (dispatched) and two prompts queued behind it.
    const db = await connectDatabase('sqlite', first.databaseUrl)
    const store = createStore(db)
    try {
      const inFlight = await insertPrompt(store, { clientMessageId: randomUUID(), sessionId, content: 'in flight' })
      await markPromptDispatched(store, inFlight!.turn.id)
      await db.session.update({ where: { id: sessionId }, data: { state: 'RUNNING' } })
      for (const content of ['q1', 'q2']) {
        const queued = await insertPrompt(store, { clientMessageId: randomUUID(), sessionId, content })
        expect(queued!.turn.queuedAt).not.toBeNull()
      }
    } finally {
      await db.$disconnect()
    }

    const second = await startTestServer('sqlite', { databaseUrl: first.databaseUrl, env: { ADMIN_TOKEN: first.adminToken } })
    servers.push(second)
    // Right after readiness: the relaunch for the stored prompts runs in the background.
    await ok(second.graphqlUrl, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: 'count' } })
    const done = await eventually(async () => {
      const s = (await ok(second.graphqlUrl, token, SessionDetailDocument, { id: sessionId, last: 100 })).session!
      const said = s.messages.filter((m) => m.author === 'AGENT' && m.kind === 'MESSAGE').map((m) => m.content)
      return s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt) && said.includes('prompts received: 3') && { s, said }
    })
    // The agent that ran them received exactly these three, in this order; the turn in flight was not re-sent.
    expect(done.said).toEqual(['echo: q1', 'echo: q2', 'prompts received: 3'])
    expect(done.s.turns.filter((t) => t.lifecycleOnly)).toHaveLength(1)
    expect(done.s.turns.filter((t) => !t.lifecycleOnly)).toHaveLength(4)
  })
})
