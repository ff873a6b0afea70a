// Opening a session (sessionEvents) relaunches its agent where none runs, as prompting does
// (MAPPING "Outages and stalls"): once however many open it together, only for a session left
// waiting for input, only for a caller who may read it; and any relaunch starts with no subagents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Client } from 'graphql-ws'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok, wsClient, wsSubscribe } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { CreateTaskDocument, CreateUserDocument, CreateWorkspaceDocument, ResumeSessionDocument, SessionEventsDocument } from '../generated/graphql.ts'
import { createSession, updateSession } from '../../src/store/sessions.ts'
import type { SessionState } from '../../src/summary/types.ts'

describe('opening a session whose agent runs nowhere (sqlite)', () => {
  let server: TestServer
  let token: string
  let outsider: string
  let taskId: string
  const clients: Client[] = []
  beforeAll(async () => {
    server = await startTestServer('sqlite')
    token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'dev' })).createUser.token
    outsider = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name: 'outsider' })).createUser.token
    const workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: 'open' })).createWorkspace.id
    taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 't' } })).createTask.id
  })
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.dispose()))
    await server?.close()
  })

  /** A session as a restart leaves it: stored, owned here, no agent process behind it (with a subagent it had). */
  async function agentless(state: SessionState) {
    const session = await createSession(server.store, { taskId, agentProfile: 'mock', state, ownerInstanceId: server.instanceId })
    await updateSession(server.store, session.id, { activeSubagentCount: 1, backgroundWork: true })
    return session.id
  }
  const connect = async (as = token) => {
    const client = await wsClient(server.wsUrl, as)
    clients.push(client)
    return client
  }
  const lifecycleTurns = (sessionId: string) => server.store.db.turn.count({ where: { sessionId, lifecycleOnly: true } })
  const row = (sessionId: string) => server.store.db.session.findUniqueOrThrow({ where: { id: sessionId } })

  it('many clients opening it at once relaunch one agent, through one lifecycle-only turn, which carries no subagents', async () => {
    const sessionId = await agentless('WAITING_FOR_INPUT')
    const openers = await Promise.all(Array.from({ length: 6 }, () => connect()))
    const subscriptions = openers.map((c) => wsSubscribe(c, SessionEventsDocument, { sessionId }))
    for (const s of subscriptions) expect((await s.waitFor(1))[0]!.data?.sessionEvents.__typename).toBe('SessionJoined')
    await eventually(async () => server.sessions.liveSessionIds().includes(sessionId) && (await row(sessionId)).state === 'WAITING_FOR_INPUT')
    expect(await lifecycleTurns(sessionId)).toBe(1)
    expect(await row(sessionId)).toMatchObject({ activeSubagentCount: 0, backgroundWork: false, ownerInstanceId: server.instanceId })
    expect(server.sessions.liveSessionIds().filter((id) => id === sessionId)).toHaveLength(1)
  })

  it('a stopped, completed or failed session stays so, and a caller who may not read the session relaunches nothing', async () => {
    const ended = await Promise.all((['CANCELLED', 'COMPLETED', 'FAILED'] as const).map(agentless))
    const hidden = await agentless('WAITING_FOR_INPUT')
    const client = await connect()
    const stranger = await connect(outsider)
    for (const sessionId of ended) await wsSubscribe(client, SessionEventsDocument, { sessionId }).waitFor(1)
    const refused = wsSubscribe(stranger, SessionEventsDocument, { sessionId: hidden })
    await refused.waitFor(1)
    expect(refused.events[0]?.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' })
    // A relaunch an opener started would be under way by now: a session opened after them boots meanwhile.
    const witness = await agentless('WAITING_FOR_INPUT')
    await wsSubscribe(client, SessionEventsDocument, { sessionId: witness }).waitFor(1)
    await eventually(async () => server.sessions.liveSessionIds().includes(witness) && (await row(witness)).state === 'WAITING_FOR_INPUT')
    for (const sessionId of [...ended, hidden]) {
      expect(server.sessions.liveSessionIds()).not.toContain(sessionId)
      expect(await lifecycleTurns(sessionId)).toBe(0)
    }
    expect((await Promise.all(ended.map(row))).map((s) => s.state)).toEqual(['CANCELLED', 'COMPLETED', 'FAILED'])
  })

  it('resumeSession starts the agent with no subagents and no background work', async () => {
    const sessionId = await agentless('CANCELLED')
    const resumed = (await ok(server.graphqlUrl, token, ResumeSessionDocument, { id: sessionId })).resumeSession
    expect(resumed.state).toBe('WAITING_FOR_INPUT')
    expect(await row(sessionId)).toMatchObject({ activeSubagentCount: 0, backgroundWork: false })
  })
})
