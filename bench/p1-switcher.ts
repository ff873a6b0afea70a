// P1: what a task switcher pays while 26 of 27 tasks' sessions stream. One client follows only
// the workspace feed; the baseline, in the same run, also subscribes to every session's stream
// (what a switcher without summaries would have to do). The server runs in its own process and
// is driven the way an outside client would: GraphQL over HTTP and graphql-ws.
import { randomUUID } from 'node:crypto'
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { SessionEventsDocument, WorkspaceEventsDocument } from '../test/generated/graphql.ts'
import { report } from './scenario.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN } from './server-process.ts'
import { countingClient, httpGql, sleep } from './support.ts'

const TASKS = 27
const STREAMING = 26
/**
 * The mock writes as fast as the pipe takes it (P3: ~400k chunks/s), so a stream's length in
 * 100 ms windows, and with it the session streams' traffic, depends on this: 20,000 chunks keep
 * 26 concurrent streams going for a few seconds, as agents generating for a while would.
 */
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 20_000)
const SETTLE_LIMIT_MS = 120_000

function follow(client: Client, query: string, variables: Record<string, unknown>, onNext: (data: unknown) => void = () => undefined) {
  client.subscribe({ query, variables }, { next: (r) => onNext(r.data), error: () => undefined, complete: () => undefined })
}

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
  const feed = print(WorkspaceEventsDocument)
  follow(switcher.client, feed, { workspaceId: createWorkspace.id }, (data) => {
    if ((data as { workspaceEvents?: { __typename: string } })?.workspaceEvents?.__typename === 'TaskStatusSummaryUpdated') revisions++
  })
  follow(everything.client, feed, { workspaceId: createWorkspace.id })
  for (const sessionId of sessions) follow(everything.client, print(SessionEventsDocument), { sessionId })
  while ((await server.call<number>('subscriptions')) < 2 + STREAMING) await sleep(20)
  await sleep(300)
  for (const t of [switcher.tally, everything.tally]) Object.assign(t, { bytes: 0, frames: 0 })

  const script = JSON.stringify({
    script: [{ think: 'planning the change', chunks: 20 }, { tool: { title: 'Read file', kind: 'read', status: 'completed' } }, { stream: { kind: 'message', count: CHUNKS } }],
  })
  const started = performance.now()
  await Promise.all(
    sessions.map((sessionId, i) =>
      gql('mutation ($input: AddMessageInput!) { addMessage(input: $input) { message { id } } }', { input: { taskId: tasks[i], sessionId, clientMessageId: randomUUID(), content: script } }),
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
  report({
    id: 'P1',
    title: `switcher traffic: ${STREAMING} of ${TASKS} sessions streaming ${CHUNKS} chunks each (${seconds.toFixed(1)} s)`,
    rows: [
      { metric: 'bytes per summary revision, feed only', value: perRevision, unit: 'B', goal: '≤ 1024 B', met: perRevision <= 1024 },
      { metric: `bytes, feed only (${revisions} revisions)`, value: switcher.tally.bytes / 1024, unit: 'KiB', baseline: { label: 'feed + every session stream', value: everything.tally.bytes / 1024 }, goal: '≥ 30× less', met: byteRatio >= 30 },
      { metric: 'frames, feed only', value: switcher.tally.frames, unit: 'frames', baseline: { label: 'feed + every session stream', value: everything.tally.frames } },
    ],
    notes: [
      `The feed carries whole summary replacements, ${perRevision.toFixed(0)} B each with the switcher's selection (test/documents/events.graphql); revisions come from state changes (running, generating, settled), not from chunks, so the feed's cost does not grow with the streams' length.`,
      `The baseline's session streams are coalesced (100 ms) and append-merged, so they too are far below the agents' raw output; the ratio (${byteRatio.toFixed(1)}×) grows with CHUNKS.`,
    ],
  })
  await Promise.all([switcher.client.dispose(), everything.client.dispose()])
} finally {
  await server.stop()
}
