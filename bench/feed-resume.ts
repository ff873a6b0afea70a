// `npm run bench:resume` (P8): what a switcher that was away pays to catch up, resuming the
// workspace feed from its last cursor, against refetching boot. A 10,000-task workspace on the
// embedded default (SQLite). The switcher boots (every task with its statusSummary, a page of 500
// at a time: the refetch, measured), follows workspaceEvents(after: boot.feedCursor), sees one
// change live and disconnects; while it is away 50 tasks change (30 titles by updateTask over
// GraphQL, 20 summaries through agent activity in the store); then it resumes with its last
// cursor until it holds the latest state of every changed task. Goals: ≤ 60 frames, ≥ 20× fewer
// bytes than the refetch.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Client } from 'graphql-ws'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer, type RunningServer } from '../src/server/app.ts'
import { decodeFeedCursor } from '../src/feed/cursor.ts'
import { createTask } from '../src/store/tasks.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { addMessage, createSession, startTurn } from '../src/store/runtime.ts'
import { countingClient } from './support.ts'

const TASKS = Number(process.env.BENCH_RESUME_TASKS ?? 10_000)
const PAGE = 500
const TITLE_CHANGES = 30
const SUMMARY_CHANGES = 20
const GOAL_FRAMES = 60
const CATCH_UP_TIMEOUT_MS = 30_000
const GOAL_BYTES_RATIO = 20
const adminToken = 'bench-admin-token-0123456789'

// What a switcher on a normalized cache selects (test/documents/clients.graphql), plus the step and the cursors.
const SUMMARY = `id taskId revision updatedAt lastActivityAt primarySession { id state } foregroundActivity activeSubagentCount
  pendingAction activeError { sessionId taskRepositoryId stamp occurredAt preview category recoveryActions }
  git { additions deletions changedFiles ahead behind comparisonUnavailable }
  pullRequest { count openCount aggregateState representative { repository number url } autoFixEnabled autoMergeEnabled }`
const TASK = `id title workflowStepId statusSummary { ${SUMMARY} }`
const CONNECTION = `edges { node { ${TASK} } } pageInfo { hasNextPage endCursor }`
const BOOT = `query ($w: ID!) { boot(workspaceId: $w) { feedCursor serverTime workspace { id name }
  workflow { steps { id name position terminal } } tasks(first: ${PAGE}) { ${CONNECTION} } } }`
const TASKS_PAGE = `query ($w: ID!, $after: String) { tasks(workspaceId: $w, first: ${PAGE}, after: $after) { ${CONNECTION} } }`
const FEED = `subscription ($w: ID!, $after: String) { workspaceEvents(workspaceId: $w, after: $after) {
  __typename
  ... on TaskUpserted { cursor task { id title workflowStepId } }
  ... on TaskDeleted { cursor taskId }
  ... on TaskStatusSummaryUpdated { cursor taskId summary { ${SUMMARY} } }
  ... on WorkspaceResync { cursor workspaceId reason } } }`

type FeedEvent =
  | { __typename: 'TaskUpserted'; cursor: string | null; task: { id: string; title: string } }
  | { __typename: 'TaskDeleted'; cursor: string | null; taskId: string }
  | { __typename: 'TaskStatusSummaryUpdated'; cursor: string | null; taskId: string; summary: { revision: number } }
  | { __typename: 'WorkspaceResync'; cursor: string | null; reason: string }

interface Connection {
  edges: { node: { id: string } }[]
  pageInfo: { hasNextPage: boolean; endCursor: string | null }
}

async function gql<T>(server: RunningServer, query: string, variables: Record<string, unknown>): Promise<{ data: T; bytes: number }> {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: JSON.stringify({ query, variables }),
  })
  const raw = Buffer.from(await response.arrayBuffer())
  const body = JSON.parse(raw.toString('utf8')) as { data?: T; errors?: unknown[] }
  if (body.errors?.length || !body.data) throw new Error(`${response.status} ${JSON.stringify(body.errors)}`)
  return { data: body.data, bytes: raw.length }
}

/** The switcher's full refetch: boot with the first page, then every further page of tasks. */
async function refetch(server: RunningServer, workspaceId: string) {
  const started = performance.now()
  const first = await gql<{ boot: { feedCursor: string; tasks: Connection } }>(server, BOOT, { w: workspaceId })
  let bytes = first.bytes
  let responses = 1
  const ids = new Set(first.data.boot.tasks.edges.map((e) => e.node.id))
  let page = first.data.boot.tasks.pageInfo
  while (page.hasNextPage) {
    const next = await gql<{ tasks: Connection }>(server, TASKS_PAGE, { w: workspaceId, after: page.endCursor })
    bytes += next.bytes
    responses++
    for (const e of next.data.tasks.edges) ids.add(e.node.id)
    page = next.data.tasks.pageInfo
  }
  if (ids.size !== TASKS) throw new Error(`the refetch read ${ids.size} tasks, expected ${TASKS}`)
  return { feedCursor: first.data.boot.feedCursor, responses, bytes, ms: performance.now() - started }
}

const subscriptionCount = (server: RunningServer) => [...server.gateway.connections()].reduce((n, c) => n + c.subscriptions.size, 0)

/**
 * Closes the client and waits until the server has let its subscription go. The store calls here
 * run synchronously on this thread (better-sqlite3), so a loop of them would otherwise keep the
 * server from reading the close frame, and a socket the switcher closed would go on receiving.
 */
async function disconnect(client: Client) {
  await client.dispose()
  while (subscriptionCount(server) > 0) await new Promise((r) => setTimeout(r, 10))
}

/**
 * What the switcher must hold after a resume from `after`: every task row and summary the
 * database positions after it, in its current state (the title, the revision).
 */
async function latestAfter(server: RunningServer, workspaceId: string, after: number) {
  const range = { workspaceId, feedSequence: { gt: after } }
  const [tasks, summaries] = await Promise.all([
    server.store.db.task.findMany({ where: range, select: { id: true, title: true } }),
    server.store.db.taskStatusSummary.findMany({ where: range, select: { taskId: true, revision: true } }),
  ])
  return { titles: new Map(tasks.map((t) => [t.id, t.title])), revisions: new Map(summaries.map((s) => [s.taskId, s.revision])) }
}

/**
 * Follows the feed from `after`, applying events to a switcher's state. `until` resolves once its
 * condition holds, checked at once and after every event (the events may all be in already).
 */
function follow(client: Client, workspaceId: string, after: string) {
  const state: SwitcherState = { titles: new Map(), revisions: new Map(), lastCursor: after, resyncs: 0, events: 0 }
  let waiting: { holds: (s: SwitcherState) => boolean; resolve: () => void } | undefined
  let failure: Error | undefined
  let failed: (error: Error) => void = () => undefined
  const check = () => {
    if (waiting?.holds(state)) {
      waiting.resolve()
      waiting = undefined
    }
  }
  const fail = (error: Error) => {
    failure = error
    failed(error)
  }
  client.subscribe<{ workspaceEvents: FeedEvent }>(
    { query: FEED, variables: { w: workspaceId, after } },
    {
      next: ({ data, errors }) => {
        if (errors?.length) return fail(new Error(JSON.stringify(errors)))
        const event = data!.workspaceEvents
        state.events++
        if (event.cursor) state.lastCursor = event.cursor
        if (event.__typename === 'TaskUpserted') state.titles.set(event.task.id, event.task.title)
        else if (event.__typename === 'TaskStatusSummaryUpdated')
          state.revisions.set(event.taskId, Math.max(state.revisions.get(event.taskId) ?? 0, event.summary.revision))
        else if (event.__typename === 'WorkspaceResync') state.resyncs++
        check()
      },
      error: (error) => fail(error instanceof Error ? error : new Error(JSON.stringify(error))),
      complete: () => undefined,
    },
  )
  // A feed that never delivers some change must end the run with what is missing, not hang it.
  const until = (expected: Expected) =>
    new Promise<void>((resolve, reject) => {
      if (failure) return reject(failure)
      const timer = setTimeout(() => reject(new Error(`not caught up after ${CATCH_UP_TIMEOUT_MS} ms: ${missing(state, expected)}`)), CATCH_UP_TIMEOUT_MS)
      failed = (error) => {
        clearTimeout(timer)
        reject(error)
      }
      waiting = {
        holds: (s) => holds(s, expected),
        resolve: () => {
          clearTimeout(timer)
          resolve()
        },
      }
      check()
    })
  return { state, until }
}

interface SwitcherState {
  titles: Map<string, string>
  revisions: Map<string, number>
  lastCursor: string
  resyncs: number
  events: number
}

type Expected = Awaited<ReturnType<typeof latestAfter>>

const holds = (state: SwitcherState, expected: Expected) =>
  [...expected.titles].every(([id, title]) => state.titles.get(id) === title) &&
  [...expected.revisions].every(([id, revision]) => (state.revisions.get(id) ?? 0) >= revision)

function missing(state: SwitcherState, expected: Expected): string {
  const titles = [...expected.titles].filter(([id, title]) => state.titles.get(id) !== title).length
  const revisions = [...expected.revisions].filter(([id, revision]) => (state.revisions.get(id) ?? 0) < revision).length
  return `${titles} of ${expected.titles.size} task rows and ${revisions} of ${expected.revisions.size} summaries not in their latest state (${state.events} events, ${state.resyncs} resyncs)`
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-resume-'))
const server = await startServer(
  // 30 mutations are far below the default budget; unlimited only so that a larger BENCH_RESUME_TASKS run never meets it.
  loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(dir, 'b.db')}`, ADMIN_TOKEN: adminToken, RATE_LIMIT_MUTATIONS: '0' }),
  { logger: pino({ level: 'silent' }) },
)
try {
  const { store } = server
  const wsUrl = `${server.url.replace(/^http/, 'ws')}/graphql`
  const admin = await store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
  const workspace = await createWorkspace(store, 'bench', admin.id)
  const setupStarted = performance.now()
  const taskIds: string[] = []
  for (let i = 0; i < TASKS; i++) taskIds.push((await createTask(store, { workspaceId: workspace.id, title: `task ${i}` })).id)
  await server.projector.idle()
  const setupSeconds = (performance.now() - setupStarted) / 1000

  await refetch(server, workspace.id) // warm-up: the same pages, so the measured one runs on warm caches too
  const boot = await refetch(server, workspace.id)

  // Connected: the switcher follows from its boot cursor and sees one change live.
  const first = countingClient(wsUrl, adminToken)
  const watched = taskIds[TASKS - 1]!
  const live = follow(first.client, workspace.id, boot.feedCursor)
  while (subscriptionCount(server) < 1) await new Promise((r) => setTimeout(r, 10))
  await gql(server, 'mutation ($id: ID!) { updateTask(id: $id, input: { title: "seen live" }) { id } }', { id: watched })
  await server.projector.idle()
  const expectLive = await latestAfter(server, workspace.id, decodeFeedCursor(boot.feedCursor).sequence)
  await live.until(expectLive)
  await disconnect(first.client)
  const lastCursor = live.state.lastCursor

  // Away: 50 other tasks change, 30 by title, 20 by their agent's activity (summary revisions only).
  const retitled = taskIds.slice(0, TITLE_CHANGES)
  const active = taskIds.slice(TITLE_CHANGES, TITLE_CHANGES + SUMMARY_CHANGES)
  for (const [i, id] of retitled.entries())
    await gql(server, 'mutation ($id: ID!, $t: String!) { updateTask(id: $id, input: { title: $t }) { id } }', { id, t: `renamed ${i}` })
  for (const [i, taskId] of active.entries()) {
    const session = await createSession(store, { taskId, agentProfile: 'mock', state: 'RUNNING' })
    const turn = await startTurn(store, { sessionId: session.id })
    await addMessage(store, { id: `away-${i}`, sessionId: session.id, turnId: turn.id, author: 'USER', kind: 'MESSAGE', content: 'go on' })
  }
  await server.projector.idle()
  const expected = await latestAfter(server, workspace.id, decodeFeedCursor(lastCursor).sequence)
  const changed = new Set([...expected.titles.keys(), ...expected.revisions.keys()])
  if (changed.size !== TITLE_CHANGES + SUMMARY_CHANGES) throw new Error(`${changed.size} tasks changed after the cursor, expected ${TITLE_CHANGES + SUMMARY_CHANGES}`)

  // Back: resume from the last cursor until every changed task is in its latest state.
  const resumeStarted = performance.now()
  const second = countingClient(wsUrl, adminToken)
  const resumed = follow(second.client, workspace.id, lastCursor)
  await resumed.until(expected)
  const resume = { ms: performance.now() - resumeStarted, frames: second.tally.frames, bytes: second.tally.bytes }
  // Anything still arriving would be a duplicate or an unrequested refetch: let the socket settle and count it.
  await new Promise((r) => setTimeout(r, 500))
  const late = { frames: second.tally.frames - resume.frames, bytes: second.tally.bytes - resume.bytes }
  await disconnect(second.client)
  if (resumed.state.resyncs > 0) throw new Error(`the resume was answered with ${resumed.state.resyncs} WorkspaceResync`)

  // Away again, and this time 50 tasks change only by their agents' activity (the switcher's usual
  // case: badges move, nobody edits a task). A task edit also moves the summary's activity time,
  // so an edited task is two events (its row and its summary), an active one is one.
  const againFrom = resumed.state.lastCursor
  const busy = taskIds.slice(100, 100 + TITLE_CHANGES + SUMMARY_CHANGES)
  for (const [i, taskId] of busy.entries()) {
    const session = await createSession(store, { taskId, agentProfile: 'mock', state: 'RUNNING' })
    const turn = await startTurn(store, { sessionId: session.id })
    await addMessage(store, { id: `busy-${i}`, sessionId: session.id, turnId: turn.id, author: 'USER', kind: 'MESSAGE', content: 'go on' })
  }
  await server.projector.idle()
  const expectedAgain = await latestAfter(server, workspace.id, decodeFeedCursor(againFrom).sequence)
  const againStarted = performance.now()
  const third = countingClient(wsUrl, adminToken)
  const again = follow(third.client, workspace.id, againFrom)
  await again.until(expectedAgain)
  const activityResume = { ms: performance.now() - againStarted, frames: third.tally.frames, bytes: third.tally.bytes }
  await disconnect(third.client)
  if (again.state.resyncs > 0) throw new Error(`the second resume was answered with ${again.state.resyncs} WorkspaceResync`)

  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`
  const bytesRatio = boot.bytes / resume.bytes
  console.info(
    `Feed resume vs boot refetch: ${TASKS} tasks on SQLite (created in ${setupSeconds.toFixed(0)} s), ${changed.size} changed while away` +
      ` (${TITLE_CHANGES} titles, ${SUMMARY_CHANGES} summaries by agent activity)`,
  )
  console.info(`  ${''.padEnd(30)} ${'frames'.padStart(8)} ${'bytes'.padStart(12)} ${'ms'.padStart(9)}`)
  console.info(`  ${'resume from the last cursor'.padEnd(30)} ${String(resume.frames).padStart(8)} ${kib(resume.bytes).padStart(12)} ${resume.ms.toFixed(0).padStart(9)}`)
  console.info(`  ${`refetch (boot + ${PAGE}-task pages)`.padEnd(30)} ${String(boot.responses).padStart(8)} ${kib(boot.bytes).padStart(12)} ${boot.ms.toFixed(0).padStart(9)}`)
  console.info(
    `  resume: ${resumed.state.events} events (${[...resumed.state.titles.keys()].length} TaskUpserted, ${[...resumed.state.revisions.keys()].length} TaskStatusSummaryUpdated)` +
      ` + ${resume.frames - resumed.state.events} protocol frames; ${late.frames} frames after caught up`,
  )
  console.info(
    `  ${`resume, ${busy.length} changed by activity only`.padEnd(30)} ${String(activityResume.frames).padStart(8)} ${kib(activityResume.bytes).padStart(12)} ${activityResume.ms.toFixed(0).padStart(9)}` +
      `  (${again.state.events} events; refetch / resume bytes ${(boot.bytes / activityResume.bytes).toFixed(1)}x)`,
  )
  console.info(`  frames: ${resume.frames} (goal ≤ ${GOAL_FRAMES}) ${resume.frames <= GOAL_FRAMES ? 'meets' : 'misses'}; activity only: ${activityResume.frames} ${activityResume.frames <= GOAL_FRAMES ? 'meets' : 'misses'}`)
  console.info(`  bytes: refetch / resume ${bytesRatio.toFixed(1)}x (goal ≥ ${GOAL_BYTES_RATIO}x) ${bytesRatio >= GOAL_BYTES_RATIO ? 'meets' : 'misses'}`)
  console.info(`  time: refetch / resume ${(boot.ms / resume.ms).toFixed(1)}x`)
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
