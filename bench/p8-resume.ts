// P8: what a switcher that was away 5 s pays to catch up, resuming the workspace feed from its
// last cursor, against refetching boot (the baseline, same run). A 10,000-task workspace on the
// embedded default (SQLite), the server in its own process. Both sides send the SDK's own
// operations over a new graphql-ws socket, as the SDK does after a reconnect: the refetch is its
// openWorkspace (ClientBoot and ClientTasksPage with first: BOOT_PAGE_SIZE, each a `subscribe`
// answered by `next` + `complete`); the resume is its ClientWorkspaceEvents(after: last cursor).
// The switcher boots, follows the feed after boot.feedCursor, sees one change live and
// disconnects; while it is away 50 tasks change (30 titles by updateTask over GraphQL, 20
// summaries by agent activity); then it resumes with its last cursor until it holds the latest
// state of every changed task. A second round renames 50 tasks (each a row and a summary change),
// a third changes 50 tasks by activity only (the usual case: badges move, nobody edits a task).
// Frames are WebSocket messages the client receives, counted alike on both sides (connection_ack
// included).
// Short (BENCH_SHORT=1): 400 tasks (two boot pages), 0.5 s away, no warm-up, the mixed round only.
import type { Client } from 'graphql-ws'
import { decodeFeedCursor } from '../src/feed/cursor.ts'
import { report, scaled, SHORT, type Row } from './scenario.ts'
import { BOOT_PAGE_SIZE, ClientBootDocument, ClientTasksPageDocument, ClientWorkspaceEventsDocument, operationName, sdkExecute, sdkSubscribe } from './sdk-operations.ts'
import { startBenchServer, BENCH_ADMIN_TOKEN, type BenchServer } from './server-process.ts'
import { countingClient, httpGql, sleep } from './support.ts'

const TASKS = Number(process.env.BENCH_RESUME_TASKS ?? scaled(10_000, 400))
const AWAY_MS = Number(process.env.BENCH_AWAY_MS ?? scaled(5000, 500))
const PAGE = BOOT_PAGE_SIZE
const TITLE_CHANGES = 30
const SUMMARY_CHANGES = 20
const CHANGES = TITLE_CHANGES + SUMMARY_CHANGES
const GOAL_FRAMES = 60
const GOAL_BYTES_RATIO = 20
const CATCH_UP_TIMEOUT_MS = 30_000

const FEED = operationName(ClientWorkspaceEventsDocument)
const BOOT = operationName(ClientBootDocument)
const TASKS_PAGE = operationName(ClientTasksPageDocument)

interface Expected {
  titles: Map<string, string>
  revisions: Map<string, number>
}

interface SwitcherState extends Expected {
  lastCursor: string
  resyncs: number
  events: number
}

const gql = <T>(server: BenchServer, query: string, variables: Record<string, unknown>) => httpGql<T>(server.url, BENCH_ADMIN_TOKEN, query, variables)

/**
 * The SDK's full refetch on a new socket (its openWorkspace, as after a WorkspaceResync): boot with
 * the first page, then every further page, one after another. Frames, bytes and time are counted
 * from opening the socket until the last page, as the resume's are.
 */
async function refetch(server: BenchServer, workspaceId: string) {
  const started = performance.now()
  const socket = countingClient(server.wsUrl, BENCH_ADMIN_TOKEN)
  const { boot } = await sdkExecute(socket.client, ClientBootDocument, { workspaceId, first: PAGE })
  let operations = 1
  const ids = new Set(boot.tasks.edges.map((e) => e.node.id))
  let page = boot.tasks.pageInfo
  while (page.hasNextPage) {
    const next = await sdkExecute(socket.client, ClientTasksPageDocument, { workspaceId, first: PAGE, after: page.endCursor })
    operations++
    for (const e of next.tasks.edges) ids.add(e.node.id)
    page = next.tasks.pageInfo
  }
  const ms = performance.now() - started
  // The last page's `complete` may still be on its way: it is part of what the refetch receives.
  for (const deadline = performance.now() + 1000; socket.tally.frames < 1 + 2 * operations && performance.now() < deadline; ) await sleep(5)
  const { frames, bytes } = socket.tally
  await disconnect(server, socket.client)
  if (ids.size !== TASKS) throw new Error(`the refetch read ${ids.size} tasks, expected ${TASKS}`)
  return { feedCursor: boot.feedCursor, operations, frames, bytes, ms }
}

/** Closes the client and waits until the server has let its subscription go. */
async function disconnect(server: BenchServer, client: Client) {
  await client.dispose()
  while ((await server.call<number>('subscriptions')) > 0) await sleep(10)
}

async function latestAfter(server: BenchServer, workspaceId: string, cursor: string): Promise<Expected> {
  const latest = await server.call<{ titles: [string, string][]; revisions: [string, number][] }>('latestAfter', { workspaceId, after: decodeFeedCursor(cursor).sequence })
  return { titles: new Map(latest.titles), revisions: new Map(latest.revisions) }
}

const holds = (state: SwitcherState, expected: Expected) =>
  [...expected.titles].every(([id, title]) => state.titles.get(id) === title) &&
  [...expected.revisions].every(([id, revision]) => (state.revisions.get(id) ?? 0) >= revision)

function missing(state: SwitcherState, expected: Expected): string {
  const titles = [...expected.titles].filter(([id, title]) => state.titles.get(id) !== title).length
  const revisions = [...expected.revisions].filter(([id, revision]) => (state.revisions.get(id) ?? 0) < revision).length
  return `${titles} of ${expected.titles.size} task rows and ${revisions} of ${expected.revisions.size} summaries not in their latest state (${state.events} events, ${state.resyncs} resyncs)`
}

/** Follows the feed from `after`, applying events to a switcher's state; `until` resolves once it holds `expected`. */
function follow(client: Client, workspaceId: string, after: string) {
  const state: SwitcherState = { titles: new Map(), revisions: new Map(), lastCursor: after, resyncs: 0, events: 0 }
  let waiting: { expected: Expected; resolve: () => void } | undefined
  let failure: Error | undefined
  let failed: (error: Error) => void = () => undefined
  const check = () => {
    if (waiting && holds(state, waiting.expected)) {
      waiting.resolve()
      waiting = undefined
    }
  }
  const fail = (error: Error) => {
    failure = error
    failed(error)
  }
  sdkSubscribe(
    client,
    ClientWorkspaceEventsDocument,
    { workspaceId, after },
    (data) => {
      if (!data) return fail(new Error(`${FEED} delivered no data`))
      const event = data.workspaceEvents
      state.events++
      if (event.cursor) state.lastCursor = event.cursor
      // As the SDK's store: an upsert's summary applies too (a replay may send a renamed task as its upsert alone).
      const revision = (taskId: string, summary: { revision: number } | null | undefined) =>
        summary && state.revisions.set(taskId, Math.max(state.revisions.get(taskId) ?? 0, summary.revision))
      if (event.__typename === 'TaskUpserted') {
        state.titles.set(event.task.id, event.task.title)
        revision(event.task.id, event.task.statusSummary)
      } else if (event.__typename === 'TaskStatusSummaryUpdated') revision(event.taskId, event.summary)
      else if (event.__typename === 'WorkspaceResync') state.resyncs++
      check()
    },
    (error) => fail(error instanceof Error ? error : new Error(JSON.stringify(error))),
  )
  // A feed that never delivers some change ends the run with what is missing, not a hang.
  const until = (expected: Expected) =>
    new Promise<void>((resolve, reject) => {
      if (failure) return reject(failure)
      const timer = setTimeout(() => reject(new Error(`not caught up after ${CATCH_UP_TIMEOUT_MS} ms: ${missing(state, expected)}`)), CATCH_UP_TIMEOUT_MS)
      failed = (error) => {
        clearTimeout(timer)
        reject(error)
      }
      waiting = {
        expected,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        },
      }
      check()
    })
  return { state, until }
}

/** Resumes from `cursor` on a fresh connection until `expected` holds: frames, bytes and time to caught up. */
async function resume(server: BenchServer, workspaceId: string, cursor: string, expected: Expected) {
  const started = performance.now()
  const switcher = countingClient(server.wsUrl, BENCH_ADMIN_TOKEN)
  const followed = follow(switcher.client, workspaceId, cursor)
  await followed.until(expected)
  const caughtUp = { ms: performance.now() - started, frames: switcher.tally.frames, bytes: switcher.tally.bytes }
  // Anything still arriving would be a duplicate or an unrequested refetch: let the socket settle and count it.
  await sleep(500)
  const late = switcher.tally.frames - caughtUp.frames
  await disconnect(server, switcher.client)
  if (followed.state.resyncs > 0) throw new Error(`the resume was answered with ${followed.state.resyncs} WorkspaceResync`)
  return { ...caughtUp, late, events: followed.state.events, lastCursor: followed.state.lastCursor }
}

/** Away for AWAY_MS from `after` while `change` runs, then resumed from `after` until caught up. */
async function awayThenResume(server: BenchServer, workspaceId: string, after: string, change: () => Promise<void>) {
  const started = performance.now()
  await change()
  const expected = await latestAfter(server, workspaceId, after)
  const changed = new Set([...expected.titles.keys(), ...expected.revisions.keys()])
  if (changed.size !== CHANGES) throw new Error(`${changed.size} tasks changed after the cursor, expected ${CHANGES}`)
  await sleep(Math.max(0, AWAY_MS - (performance.now() - started)))
  return resume(server, workspaceId, after, expected)
}

const server = await startBenchServer({ handlers: new URL('./p8-handlers.ts', import.meta.url) })
try {
  const { workspaceId, taskIds } = await server.call<{ workspaceId: string; taskIds: string[] }>('seed', { tasks: TASKS })
  if (!SHORT) await refetch(server, workspaceId) // warm-up: the measured refetch runs on warm caches too
  const boot = await refetch(server, workspaceId)
  const rename = async (ids: string[], prefix: string) => {
    for (const [i, id] of ids.entries())
      await gql(server, 'mutation ($id: ID!, $t: String!) { updateTask(id: $id, input: { title: $t }) { id } }', { id, t: `${prefix} ${i}` })
    await server.call('idle')
  }

  // Connected: the switcher follows from its boot cursor and sees one change live.
  const first = countingClient(server.wsUrl, BENCH_ADMIN_TOKEN)
  const live = follow(first.client, workspaceId, boot.feedCursor)
  while ((await server.call<number>('subscriptions')) < 1) await sleep(10)
  await gql(server, 'mutation ($id: ID!) { updateTask(id: $id, input: { title: "seen live" }) { id } }', { id: taskIds[TASKS - 1] })
  await server.call('idle')
  await live.until(await latestAfter(server, workspaceId, boot.feedCursor))
  await disconnect(server, first.client)

  // Away: 50 other tasks change, 30 by title, 20 by their agent's activity.
  const mixed = await awayThenResume(server, workspaceId, live.state.lastCursor, async () => {
    await rename(taskIds.slice(0, TITLE_CHANGES), 'renamed')
    await server.call('activity', { taskIds: taskIds.slice(TITLE_CHANGES, CHANGES), prefix: 'away' })
  })
  const rounds: [string, typeof mixed][] = [[`${TITLE_CHANGES} renamed + ${SUMMARY_CHANGES} active`, mixed]]
  if (!SHORT) {
    // Away again: 50 tasks renamed, then 50 changed by activity only.
    const renamed = await awayThenResume(server, workspaceId, mixed.lastCursor, () => rename(taskIds.slice(150, 150 + CHANGES), 'again'))
    rounds.push([`${CHANGES} renamed`, renamed])
    const activity = await awayThenResume(server, workspaceId, renamed.lastCursor, () => server.call('activity', { taskIds: taskIds.slice(100, 100 + CHANGES), prefix: 'busy' }))
    rounds.push([`${CHANGES} active`, activity])
  }

  const refetchLabel = `${BOOT} + ${boot.operations - 1} ${TASKS_PAGE}(first: ${PAGE}) on a new socket`
  const resumeLabel = (what: string) => `${FEED}(after) on a new socket (${what})`
  const rows = (what: string, run: typeof mixed): Row[] => [
    {
      metric: `frames received to caught up, ${resumeLabel(what)} (frames ratio)`,
      value: run.frames,
      unit: 'frames',
      baseline: { label: `${refetchLabel}: ack, next + complete each`, value: boot.frames },
      goal: `≤ ${GOAL_FRAMES}`,
      met: run.frames <= GOAL_FRAMES,
    },
    {
      metric: `bytes received to caught up, ${resumeLabel(what)} (bytes ratio)`,
      value: run.bytes / 1024,
      unit: 'KiB',
      baseline: { label: refetchLabel, value: boot.bytes / 1024 },
      goal: `≥ ${GOAL_BYTES_RATIO}× fewer`,
      met: boot.bytes / run.bytes >= GOAL_BYTES_RATIO,
    },
    { metric: `time to caught up, ${resumeLabel(what)} (latency ratio)`, value: run.ms, unit: 'ms', baseline: { label: refetchLabel, value: boot.ms } },
  ]
  const late = rounds.reduce((sum, [, run]) => sum + run.late, 0)
  const events = rounds.map(([what, run]) => `${run.events} events for ${what}`).join(', ')
  report({
    id: 'P8',
    title: `reconnect of a ${TASKS}-task switcher after ${AWAY_MS / 1000} s away, ${CHANGES} tasks changed`,
    rows: [
      ...rounds.flatMap(([what, run]) => rows(what, run)),
      { metric: `frames received after caught up (every resume, ${FEED} held 500 ms more)`, value: late, unit: 'frames', goal: '0', met: late === 0 },
    ],
    notes: [
      `Both sides are the SDK's operations on a new socket, counted from opening it: the resume is connection_ack plus one \`next\` frame per replayed event (the SDK's selection: TaskUpserted with the whole TaskRowFields row, its statusSummary included, TaskStatusSummaryUpdated with StatusSummaryFields); the refetch is connection_ack plus \`next\` and \`complete\` for each of its ${boot.operations} operations (${BOOT} and ${TASKS_PAGE}, ${PAGE} tasks a page: the SDK's BOOT_PAGE_SIZE, as the server's cost limit refuses 500 with every summary field), ${boot.frames} frames. The SDK then subscribes ${FEED} after the refetched cursor, which adds no frame until something changes.`,
      `The resume replays each changed task once in its latest state (${events}). A rename moves the task's summary too (the spec makes a task edit move its activity time), but the SDK's TaskUpserted selects every summary field its TaskStatusSummaryUpdated does, so a replay sends a renamed task as its TaskUpserted alone, the current summary inside (src/feed/replay-items.ts); live, a rename is still both events.`,
      `The refetch is bound by graphql-js resolving the summary fields for each of ${TASKS} tasks; the resume by three indexed range reads after the cursor. The changes are made with updateTask over HTTP (not an SDK operation) and by agent activity written through the store.`,
    ],
  })
} finally {
  await server.stop()
}
