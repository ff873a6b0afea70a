// R6 (docs/performance.md): a client subscribed to a flooding session stops reading its socket.
// The server closes it with 1013 once its queue bound is reached (well before the keepalive
// would drop it), holds no more than that bound for it meanwhile, and a second client on the
// same server keeps getting its responses and its workspace feed.
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratedDatabase } from '../support/databases.ts'
import { INSTANCE_ADMIN_TOKEN, killAll, metricValue, startInstance, type Instance } from '../support/instances.ts'
import { ok, wsClient, wsExecute, wsSubscribe } from '../support/client.ts'
import { rawGraphqlWs } from '../support/raw-ws.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import { DEFAULT_LIMITS } from '../../src/outbound/outbound-scheduler.ts'
import {
  AddMessageDocument,
  CreateTaskDocument,
  SessionDetailDocument,
  StartSessionDocument,
  TaskStatusSummariesDocument,
  ViewerDocument,
  WorkspaceEventsDocument,
} from '../generated/graphql.ts'

/**
 * The stalled reader must reach its queue bound before the server's keepalive (a ping every 12 s,
 * unanswered by a client that reads nothing) drops it, on a loaded two-core machine whose kernel
 * first absorbs up to 4 MB of send buffer. So its traffic is heavy per agent event: it holds
 * several subscriptions of the noisy session (as a page with several panes on it would) whose
 * MessageAdded selects the message text many times over (aliases, within the contract's limit),
 * and the agent says many long messages: each agent message is PANES semantic frames of about
 * ALIASES × TEXT bytes.
 */
const PANES = 20
const ALIASES = 14
const MESSAGES = 200
const TEXT = 1_000
const flood = JSON.stringify({ script: Array.from({ length: MESSAGES }, (_, i) => ({ say: `${i} `.padEnd(TEXT, 'x'), chunks: 1 })) })
const paneSubscription = `subscription ($sessionId: ID!) { sessionEvents(sessionId: $sessionId) { __typename ... on MessageAdded { message { id ${Array.from({ length: ALIASES }, (_, i) => `t${i}: content`).join(' ')} } } } }`
/** What the server may hold for the stalled connection at most (MAPPING: control, semantic, replaceable per connection). */
const STALLED_BOUND = DEFAULT_LIMITS.control + DEFAULT_LIMITS.semantic + DEFAULT_LIMITS.replaceablePerConnection
/** The server pings every 12 s and drops a silent client at the next ping: a 1013 comes before that or not at all. */
const CLOSE_WITHIN_MS = 24_000
/**
 * A healthy client's round trip while the flood runs. Generous: rendering the flood's frames
 * keeps a loaded two-core machine busy whoever reads them; what the bound catches is a server
 * that waits on the stalled peer (a response that never comes, or comes after the peer is gone).
 */
const HEALTHY_RESPONSE_MS = 10_000
/** Requests the healthy client makes during the flood, at least. */
const HEALTHY_REQUESTS = 20
/** RSS growth allowed over the flood: the bounded queues are a few MB; a queue growing with the flood would hold the whole stream. */
const RSS_GROWTH_BYTES = 256 * 1024 * 1024

describe('R6: a client that stops reading (sqlite, one server process)', () => {
  const children: ChildProcess[] = []
  let server: Instance
  let token: string
  let workspaceId: string
  beforeAll(async () => {
    server = await startInstance('r6', { DATABASE_URL: await migratedDatabase('sqlite'), LOG_LEVEL: 'warn' }, children)
    ;({ token, workspaceId } = await userWithWorkspace({ graphqlUrl: server.url, adminToken: INSTANCE_ADMIN_TOKEN }, 'r6'))
  })
  afterAll(() => killAll(children))

  const metric = (name: string, labels: Record<string, string> = {}) => metricValue(server, name, labels)

  it('is closed with 1013 within the keepalive interval, with bounded queues and memory, while another client is served as usual', { timeout: 180_000 }, async () => {
    const taskId = (await ok(server.url, token, CreateTaskDocument, { input: { workspaceId, title: 'noisy' } })).createTask.id
    const sessionId = (await ok(server.url, token, StartSessionDocument, { input: { taskId } })).startSession.id
    // The agent is up before the reader stalls: the flood starts at once, well inside the keepalive interval.
    await eventually(async () => (await ok(server.url, token, SessionDetailDocument, { id: sessionId, last: 1 })).session?.state === 'WAITING_FOR_INPUT', 60_000)

    const stalled = await rawGraphqlWs(server.wsUrl, token)
    for (let i = 0; i < PANES; i++) stalled.send({ id: `pane-${i}`, type: 'subscribe', payload: { query: paneSubscription, variables: { sessionId } } })
    for (let i = 0; i < PANES; i++) await stalled.waitFor((f) => f.id === `pane-${i}` && f.type === 'next')

    const healthy = await wsClient(server.wsUrl, token)
    const feed = wsSubscribe(healthy, WorkspaceEventsDocument, { workspaceId })
    const roundTrip = async () => {
      const started = performance.now()
      const result = await wsExecute(healthy, ViewerDocument)
      expect(result.data?.viewer.user.name).toBe('r6')
      return performance.now() - started
    }
    const idle: number[] = []
    for (let i = 0; i < 10; i++) idle.push(await roundTrip())
    const rssBefore = await metric('process_resident_memory_bytes')
    const overflowsBefore = await metric('delivery_overflow_closes_total')

    stalled.pauseReading()
    const flooding = performance.now()
    await ok(server.url, token, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: flood } })

    // While the stalled client backs up: the other client's requests, the server's queues and memory.
    const loaded: number[] = []
    let maxDepth = 0
    let maxRss = rssBefore
    let closedAfterMs: number | undefined
    let settled = false
    const deadline = performance.now() + 150_000
    while (!(settled && closedAfterMs !== undefined && loaded.length >= HEALTHY_REQUESTS) && performance.now() < deadline) {
      loaded.push(await roundTrip())
      maxDepth = Math.max(maxDepth, await metric('delivery_queue_depth'))
      maxRss = Math.max(maxRss, await metric('process_resident_memory_bytes'))
      if (closedAfterMs === undefined && (await metric('delivery_overflow_closes_total')) > overflowsBefore) closedAfterMs = performance.now() - flooding
      if (!settled) {
        const { session } = await ok(server.url, token, SessionDetailDocument, { id: sessionId, last: 1 })
        // The flood's turn is the session's only conversational one.
        settled = session?.state === 'WAITING_FOR_INPUT' && session.turns.some((t) => !t.lifecycleOnly && t.completedAt !== null)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    console.info(
      `R6: 1013 after ${Math.round(closedAfterMs ?? -1)} ms; max queued frames ${maxDepth} (bound ${STALLED_BOUND}); ` +
        `RSS +${Math.round((maxRss - rssBefore) / 1024 / 1024)} MB; other client p50 ${median(loaded).toFixed(1)} ms under flood vs ${median(idle).toFixed(1)} ms idle (×${(median(loaded) / median(idle)).toFixed(2)}), max ${Math.max(...loaded).toFixed(0)} ms over ${loaded.length} requests`,
    )
    expect(settled).toBe(true)
    expect(closedAfterMs).toBeDefined()
    expect(closedAfterMs!).toBeLessThan(CLOSE_WITHIN_MS)

    // The stalled client reads again: what the server wrote ends with its 1013 close frame.
    stalled.resumeReading()
    expect(await stalled.closed).toMatchObject({ code: 1013 })
    expect(await metric('websocket_server_closes_total', { code: '1013', reason: 'queue_overflow' })).toBe(1)

    // The healthy client's own queue adds a few frames at most to the stalled connection's bound.
    expect(maxDepth).toBeLessThanOrEqual(STALLED_BOUND + 16)
    expect(maxRss - rssBefore).toBeLessThan(RSS_GROWTH_BYTES)
    for (const ms of loaded) expect(ms).toBeLessThan(HEALTHY_RESPONSE_MS)

    // The other client's feed followed the noisy task to its stored summary (turn start, then its end).
    const { taskStatusSummaries } = await ok(server.url, token, TaskStatusSummariesDocument, { taskIds: [taskId] })
    const stored = taskStatusSummaries[0]!
    expect(stored).toMatchObject({ foregroundActivity: null, primarySession: { id: sessionId, state: 'WAITING_FOR_INPUT' } })
    const latest = await eventually(() => {
      const revisions = feed.events.map((e) => e.data?.workspaceEvents).filter((e) => e?.__typename === 'TaskStatusSummaryUpdated' && e.taskId === taskId)
      const last = revisions.at(-1)
      return last?.__typename === 'TaskStatusSummaryUpdated' && last.summary.revision === stored.revision && last
    })
    expect(latest.summary).toEqual(stored)
    feed.dispose()
    await healthy.dispose()
  })
})
