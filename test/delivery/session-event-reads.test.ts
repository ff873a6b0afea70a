import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Client } from 'graphql-ws'
import { startTestServer, type TestServer } from '../support/server.ts'
import { wsClient, wsSubscribe } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { createTask } from '../../src/store/tasks.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { createSession } from '../../src/store/sessions.ts'
import { startTurn } from '../../src/store/turns.ts'
import type { SessionEventPayload } from '../../src/pubsub/pubsub.ts'
import { SessionEventsDocument } from '../generated/graphql.ts'

describe('sessionEvents reads each event once per instance, whatever the number of subscribers (sqlite)', () => {
  let server: TestServer
  const statements: string[] = []
  let token: string
  let sessionId: string
  /** Fresh payload objects per publish, as every publisher builds them. */
  let events: () => SessionEventPayload[]

  beforeAll(async () => {
    server = await startTestServer('sqlite', { onQuery: (sql) => statements.push(sql) })
    const owner = await userWithWorkspace(server, 'dev')
    token = owner.token
    const task = await createTask(server.store, { workspaceId: owner.workspaceId, title: 'watched' })
    // Stopped: opening a session waiting for input would relaunch its agent, whose events and writes this count is not about.
    sessionId = (await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'CANCELLED' })).id
    const turn = await startTurn(server.store, { sessionId })
    const message = await insertMessage(server.store, { id: 'm-1', sessionId, turnId: turn.id, author: 'USER', kind: 'MESSAGE', content: 'hi' })
    await server.projector.idle()
    events = () => [
      { type: 'SessionStateChanged', sessionId, state: 'WAITING_FOR_INPUT' },
      { type: 'MessageAdded', sessionId, messageId: message.id },
      { type: 'MessageUpdated', sessionId, messageId: message.id, version: 1 },
      { type: 'TurnStarted', sessionId, turnId: turn.id },
      { type: 'SessionGitUpdated', sessionId },
      { type: 'SessionModelsUpdated', sessionId },
    ]
  })
  afterAll(() => server?.close())

  /** Statements run while `subscribers` connections each receive the same events once. */
  async function statementsFor(subscribers: number) {
    const clients: Client[] = await Promise.all(Array.from({ length: subscribers }, () => wsClient(server.wsUrl, token)))
    const streams = clients.map((c) => wsSubscribe(c, SessionEventsDocument, { sessionId }))
    await Promise.all(streams.map((s) => s.waitFor(1)))
    await server.projector.idle()
    statements.length = 0
    const published = events()
    for (const event of published) await server.pubsub.publish('session', sessionId, event)
    const received = await Promise.all(streams.map((s) => s.waitFor(1 + published.length)))
    const counted = statements.length
    for (const r of received) expect(r.slice(1).map((e) => e.data?.sessionEvents.__typename)).toEqual(published.map((e) => e.type))
    for (const s of streams) s.dispose()
    await Promise.all(clients.map((c) => c.dispose()))
    return counted
  }

  it('costs the same statements per event for 1 and 8 subscribers', async () => {
    const one = await statementsFor(1)
    const eight = await statementsFor(8)
    console.info(`sessionEvents statements for ${events().length} events: 1 subscriber → ${one}, 8 subscribers → ${eight}`)
    expect(one).toBeGreaterThan(0)
    expect(eight).toBe(one)
  })
})
