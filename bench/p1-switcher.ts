// P1: what a task switcher pays while 26 of 27 tasks' sessions stream. Both clients send the
// SDK's own operations (packages/client/src/operations): one boots (ClientBoot) and follows the workspace
// feed after boot.feedCursor (ClientWorkspaceEvents), as the SDK's openWorkspace does; the
// baseline, in the same run, also opens every session's stream with the SDK's ClientSessionEvents
// (what a switcher without summaries would have to do: setVisibleSessions with every session).
// The server runs in its own process and is driven the way an outside client would: GraphQL over
// HTTP and graphql-ws.
import { randomUUID } from 'node:crypto'
import { report, scaled } from './scenario.ts'
import {
  BOOT_PAGE_SIZE,
  ClientAddMessageDocument,
  ClientBootDocument,
  ClientSessionEventsDocument,
  ClientWorkspaceEventsDocument,
  operationName,
  sdkHttp,
  sdkSubscribe,
} from './sdk-operations.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN } from './server-process.ts'
import { countingClient, httpGql, sleep } from './support.ts'

// Short (BENCH_SHORT=1): 4 streams of 2,000 chunks, enough to carry every kind of frame once.
const TASKS = scaled(27, 5)
const STREAMING = scaled(26, 4)
/**
 * The mock writes as fast as the pipe takes it (P3: ~400k chunks/s), so a stream's length in
 * 100 ms windows, and with it the session streams' traffic, depends on this: 20,000 chunks keep
 * 26 concurrent streams going for a few seconds, as agents generating for a while would.
 */
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? scaled(20_000, 2_000))
const SETTLE_LIMIT_MS = 120_000

const FEED = operationName(ClientWorkspaceEventsDocument)
const SESSION = operationName(ClientSessionEventsDocument)

const server = await startBenchServer()
const gql = <T>(query: string, variables: Record<string, unknown> = {}) => httpGql<T>(server.url, BENCH_ADMIN_TOKEN, query, variables).then((r) => r.data)
try {
  const { createWorkspace } = await gql<{ createWorkspace: { id: string } }>('mutation { createWorkspace(name: "bench") { id } }')
  const tasks: string[] = []
  for (let i = 0; i < TASKS; i++)
    tasks.push((await gql<{ createTask: { id: string } }>('mutation ($w: ID!, $t: String!) { createTask(input: { workspaceId: $w, title: $t }) { id } }', { w: createWorkspace.id, t: `task ${i}` })).createTask.id)
  const sessions: string[] = []
  for (const taskId of tasks.slice(0, STREAMING))
    sessions.push((await gql<{ startSession: { id: string } }>('mutation ($t: ID!) { startSession(input: { taskId: $t }) { id } }', { t: taskId })).startSession.id)
  await server.call('idle')

  let revisions = 0
  const switcher = countingClient(server.wsUrl, BENCH_ADMIN_TOKEN)
  const everything = countingClient(server.wsUrl, BENCH_ADMIN_TOKEN)
  // The SDK's openWorkspace: boot (its responses are not counted: both clients would read the same), then the feed after its cursor.
  const { boot } = await sdkHttp(server.url, BENCH_ADMIN_TOKEN, ClientBootDocument, { workspaceId: createWorkspace.id, first: BOOT_PAGE_SIZE })
  const feed = { workspaceId: createWorkspace.id, after: boot.feedCursor }
  sdkSubscribe(switcher.client, ClientWorkspaceEventsDocument, feed, (data) => {
    if (data?.workspaceEvents.__typename === 'TaskStatusSummaryUpdated') revisions++
  })
  sdkSubscribe(everything.client, ClientWorkspaceEventsDocument, feed)
  for (const sessionId of sessions) sdkSubscribe(everything.client, ClientSessionEventsDocument, { sessionId })
  while ((await server.call<number>('subscriptions')) < 2 + STREAMING) await sleep(20)
  await sleep(300)
  for (const t of [switcher.tally, everything.tally]) Object.assign(t, { bytes: 0, frames: 0 })

  const script = JSON.stringify({
    script: [{ think: 'planning the change', chunks: 20 }, { tool: { title: 'Read file', kind: 'read', status: 'completed' } }, { stream: { kind: 'message', count: CHUNKS } }],
  })
  const started = performance.now()
  await Promise.all(
    sessions.map((sessionId, i) =>
      sdkHttp(server.url, BENCH_ADMIN_TOKEN, ClientAddMessageDocument, { input: { taskId: tasks[i]!, sessionId, clientMessageId: randomUUID(), content: script } }),
    ),
  )
  // Settled: every session back to waiting for input, and both sockets quiet for a moment.
  const states = 'query ($w: ID!) { tasks(workspaceId: $w, first: 100) { edges { node { statusSummary { primarySession { state } } } } } }'
  for (;;) {
    if (performance.now() - started > SETTLE_LIMIT_MS) throw new Error('the streams did not finish in time')
    const { tasks: page } = await gql<{ tasks: { edges: { node: { statusSummary: { primarySession: { state: string } | null } } }[] } }>(states, { w: createWorkspace.id })
    if (page.edges.every((e) => e.node.statusSummary.primarySession?.state !== 'RUNNING')) break
    await sleep(200)
  }
  let last = -1
  while (everything.tally.bytes !== last) {
    last = everything.tally.bytes
    await sleep(500)
  }
  const seconds = (performance.now() - started) / 1000
  const perRevision = switcher.tally.bytes / Math.max(1, revisions)
  const byteRatio = everything.tally.bytes / switcher.tally.bytes
  /** The message text the agents streamed: "0;1;2;…" per session (UTF-8, one byte a character). */
  let streamedText = 0
  for (let i = 0; i < CHUNKS; i++) streamedText += `${i};`.length
  streamedText *= STREAMING
  const baselineLabel = `${FEED} + ${SESSION} on all ${STREAMING} sessions`
  report({
    id: 'P1',
    title: `switcher traffic: ${STREAMING} of ${TASKS} sessions streaming ${CHUNKS} chunks each (${seconds.toFixed(1)} s)`,
    rows: [
      { metric: `bytes received per summary revision, ${FEED} only`, value: perRevision, unit: 'B', goal: '≤ 1024 B', met: perRevision <= 1024 },
      {
        metric: `bytes received, ${FEED} only, ${revisions} revisions (bytes ratio)`,
        value: switcher.tally.bytes / 1024,
        unit: 'KiB',
        baseline: { label: baselineLabel, value: everything.tally.bytes / 1024 },
        goal: '≥ 30× less',
        met: byteRatio >= 30,
      },
      { metric: `frames received, ${FEED} only (frames ratio)`, value: switcher.tally.frames, unit: 'frames', baseline: { label: baselineLabel, value: everything.tally.frames } },
    ],
    notes: [
      `Both clients send the SDK's operations (packages/client/src/operations, as the page sends them through the SDK): ClientBoot, then ${FEED}(workspaceId, after: boot.feedCursor); the baseline adds ${SESSION}(sessionId) for every streaming session. Counted: every WebSocket message either client receives from the moment all subscriptions are live (the server's keepalive pings included) until the streams settle; the boot response and the SessionJoined snapshots are before it.`,
      `The feed carries whole summary replacements, ${perRevision.toFixed(0)} B each with the SDK's selection (TaskStatusSummaryUpdated with StatusSummaryFields); revisions come from state changes (running, generating, settled), not from chunks, so the feed's cost does not grow with the streams' length.`,
      `The baseline's session streams are what the SDK's ${SESSION} receives: each MessageUpdated selects the whole message (content, never the (v1.2) append field), coalesced into 100 ms windows, an update not yet written replaced by the next: the agents streamed ${(streamedText / 1024).toFixed(0)} KiB of message text in all and the baseline received ${(everything.tally.bytes / streamedText).toFixed(2)}× that, each window re-sending its message whole. The feed's bytes do not grow with CHUNKS, so the ratio (${byteRatio.toFixed(1)}×) does; a client selecting append instead of content would receive each streamed character once (not measured: the SDK does not send it).`,
      'Setup and the settle check (createWorkspace, createTask, startSession, a tasks query) are hand-written admin requests over HTTP, not counted; the streams are started by the SDK\'s ClientAddMessage over HTTP.',
    ],
  })
  await Promise.all([switcher.client.dispose(), everything.client.dispose()])
} finally {
  await server.stop()
}
