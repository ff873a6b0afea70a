// P13 (`npm run bench -- P13`): an append costs what its chunk costs, whatever the message's length.
// 1. The store alone, on SQLite and PostgreSQL: appends of 1 KB to a 3 KB message and to a 3 MB one
//    (grown by appends, as a stream grows it), alternated round by round; the time is the
//    statement's on the caller's side (better-sqlite3 runs on the event loop, so on SQLite it is
//    the time the server's loop is held). The same pair with the previous statement (`content ||
//    text`, rewriting the row) on messages of the same lengths, in the same run, is the before.
//    Goal: the 3 MB append within 1.5× the 3 KB append, on both.
// 2. stopSession on PostgreSQL while sessions stream multi-MB messages: a server process on
//    PostgreSQL, BENCH_P13_SESSIONS sessions of bench/stream-agent.ts each streaming until its
//    message passes 3 MB, then each session stopped over HTTP, one after the other, while the
//    others still stream. Goal: each stopSession < 1 s.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DatabaseProvider } from '../src/config/config.ts'
import { connectDatabase, type Db } from '../src/store/db.ts'
import { deployMigrations } from '../src/store/migrate.ts'
import { appendMessageContent } from '../src/store/message-content.ts'
import { insertMessage, messageContent } from '../src/store/messages.ts'
import { createSession } from '../src/store/sessions.ts'
import { createTask } from '../src/store/tasks.ts'
import { createStore, type Store } from '../src/store/store.ts'
import { createUserWithToken } from '../src/store/users.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { report, scaled, type Row } from './scenario.ts'
import { BENCH_ADMIN_TOKEN, startBenchServer } from './server-process.ts'
import { ClientAddMessageDocument, sdkHttp } from './sdk-operations.ts'
import type { StreamPrompt } from './stream-agent.ts'
import type { handlers } from './p10-embedded-server.ts'
import { httpGql, median, quantile, sleep } from './support.ts'

const SMALL_BYTES = 3 * 1024
const LARGE_BYTES = scaled(3 * 1024 * 1024, 256 * 1024)
const CHUNK = 'x'.repeat(1024)
const GROWTH_CHUNK = 'y'.repeat(16 * 1024)
const ROUNDS = scaled(15, 2)
const APPENDS_PER_ROUND = 20
const GOAL_RATIO = 1.5
const SESSIONS = Number(process.env.BENCH_P13_SESSIONS ?? scaled(4, 1))
const STOP_GOAL_MS = 1000
const STREAM_DEADLINE_MS = 180_000

const here = path.dirname(fileURLToPath(import.meta.url))

/** The statement appends made before message-content.ts: the whole content rewritten. */
const rewriteAppend = (db: Db, id: string, text: string) =>
  db.$executeRaw`UPDATE "Message" SET "content" = "content" || ${text}, "version" = "version" + 1, "updatedAt" = ${new Date()} WHERE "id" = ${id}`

async function timedAppends(append: (text: string) => Promise<unknown>): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < APPENDS_PER_ROUND; i++) {
    const started = performance.now()
    await append(CHUNK)
    times.push(performance.now() - started)
  }
  return times
}

async function storeAppends(provider: DatabaseProvider, url: string) {
  await deployMigrations(provider, url)
  const db = await connectDatabase(provider, url)
  try {
    const store: Store = createStore(db)
    const { user } = await createUserWithToken(db, 'p13')
    const workspace = await createWorkspace(store, `p13-${provider}`, user.id)
    const task = await createTask(store, { workspaceId: workspace.id, title: 'p13' })
    const sessionId = (await createSession(store, { taskId: task.id, agentProfile: 'mock' })).id
    const message = (content: string) => insertMessage(store, { id: randomUUID(), sessionId, author: 'AGENT', kind: 'MESSAGE', content, status: 'IN_PROGRESS' })
    // The large message grows by appends, as a stream grows it (its chunks are what a read joins).
    const large = await message('0'.repeat(SMALL_BYTES))
    for (let grown = SMALL_BYTES; grown < LARGE_BYTES; grown += GROWTH_CHUNK.length) await appendMessageContent(store, large.id, GROWTH_CHUNK)
    const largeWhole = await message((await messageContent(store, large.id))!)
    const times = { small: [] as number[], large: [] as number[], rewriteSmall: [] as number[], rewriteLarge: [] as number[] }
    for (let round = 0; round < ROUNDS; round++) {
      // A fresh small message each round, so it stays at 3 KB.
      const small = await message('0'.repeat(SMALL_BYTES))
      const smallWhole = await message('0'.repeat(SMALL_BYTES))
      times.small.push(...(await timedAppends((text) => appendMessageContent(store, small.id, text))))
      times.large.push(...(await timedAppends((text) => appendMessageContent(store, large.id, text))))
      times.rewriteSmall.push(...(await timedAppends((text) => rewriteAppend(db, smallWhole.id, text))))
      times.rewriteLarge.push(...(await timedAppends((text) => rewriteAppend(db, largeWhole.id, text))))
    }
    const read = performance.now()
    const length = (await messageContent(store, large.id))!.length
    return { ...times, readMs: performance.now() - read, length }
  } finally {
    await db.$disconnect()
  }
}

type Call = <K extends keyof typeof handlers>(name: K, args?: Parameters<(typeof handlers)[K]>[1]) => Promise<Awaited<ReturnType<(typeof handlers)[K]>>>

/** Sessions streaming until each message passes LARGE_BYTES, then stopped one by one while the rest stream on. */
async function stopsWhileStreaming(postgresUrl: string) {
  await deployMigrations('postgres', postgresUrl)
  const server = await startBenchServer({
    handlers: new URL('./p10-embedded-server.ts', import.meta.url),
    env: {
      DATABASE_URL: postgresUrl,
      AGENT_PROFILES: JSON.stringify({ 'bench-stream': { command: [process.execPath, '--import', import.meta.resolve('tsx'), path.join(here, 'stream-agent.ts')] } }),
    },
  })
  try {
    const call = server.call as Call
    const { sessions } = await call('seed', { profiles: Array.from({ length: SESSIONS }, () => 'bench-stream') })
    // "i;" items: about 7 bytes each at these counts; 300 items a notification, 20 a second, streams ~40 KB/s each.
    const prompt = JSON.stringify({ count: 10_000_000, group: 300, seconds: 1_700 } satisfies StreamPrompt)
    for (const s of sessions) await sdkHttp(server.url, BENCH_ADMIN_TOKEN, ClientAddMessageDocument, { input: { ...s, clientMessageId: randomUUID(), content: prompt } })
    const longest = async (sessionId: string) => {
      const { data } = await httpGql<{ session: { messages: { content: string }[] } }>(
        server.url,
        BENCH_ADMIN_TOKEN,
        'query($id: ID!) { session(id: $id) { messages(last: 1) { content } } }',
        { id: sessionId },
      )
      return data.session.messages[0]?.content.length ?? 0
    }
    const started = performance.now()
    while ((await longest(sessions[sessions.length - 1]!.sessionId)) < LARGE_BYTES) {
      if (performance.now() - started > STREAM_DEADLINE_MS) throw new Error(`the streams did not reach ${LARGE_BYTES} bytes in ${STREAM_DEADLINE_MS / 1000} s`)
      await sleep(1_000)
    }
    const lengths = await Promise.all(sessions.map((s) => longest(s.sessionId)))
    const stops: number[] = []
    for (const s of sessions) {
      const at = performance.now()
      await httpGql(server.url, BENCH_ADMIN_TOKEN, 'mutation($id: ID!) { stopSession(id: $id) { id state } }', { id: s.sessionId })
      stops.push(performance.now() - at)
    }
    return { stops, lengths, streamedSeconds: (performance.now() - started) / 1000 }
  } finally {
    await server.stop()
  }
}

const sqliteDir = mkdtempSync(path.join(os.tmpdir(), 'tss-p13-'))
const cluster = await startPostgresCluster()
try {
  await cluster.query('CREATE DATABASE p13_store')
  await cluster.query('CREATE DATABASE p13_server')
  const results = {
    sqlite: await storeAppends('sqlite', `file:${path.join(sqliteDir, 'p13.db')}`),
    postgres: await storeAppends('postgres', cluster.url('p13_store')),
  }
  const stop = await stopsWhileStreaming(cluster.url('p13_server'))
  const kb = (n: number) => `${Math.round(n / 1024).toLocaleString('en')} KB`
  const rows: Row[] = []
  for (const [provider, r] of Object.entries(results)) {
    const name = provider === 'sqlite' ? 'SQLite' : 'PostgreSQL'
    const at = `${name}, a 1 KB append to a ${kb(LARGE_BYTES)} message, median (time ratio)`
    const small = { label: `the same append to a ${kb(SMALL_BYTES)} message`, value: median(r.small) }
    rows.push(
      { metric: at, value: median(r.large), unit: 'ms', baseline: small, goal: `≤ ${GOAL_RATIO}×`, met: median(r.large) <= GOAL_RATIO * small.value },
      { metric: `${at.replace('median', 'p99')}`, value: quantile(r.large, 0.99), unit: 'ms', baseline: { ...small, value: quantile(r.small, 0.99) } },
      {
        metric: `${name}, before: the rewriting append (content || text) to a ${kb(LARGE_BYTES)} message, median (time ratio)`,
        value: median(r.rewriteLarge),
        unit: 'ms',
        baseline: { label: `the rewriting append to a ${kb(SMALL_BYTES)} message`, value: median(r.rewriteSmall) },
      },
    )
  }
  const slowest = Math.max(...stop.stops)
  rows.push({
    metric: `PostgreSQL, stopSession of a session streaming a message of ${kb(Math.min(...stop.lengths))}+ while ${SESSIONS - 1} others stream, slowest of ${SESSIONS}`,
    value: slowest,
    unit: 'ms',
    goal: `< ${STOP_GOAL_MS} ms`,
    met: slowest < STOP_GOAL_MS,
  })
  report({
    id: 'P13',
    title: 'append cost by message length; stopSession of multi-MB streams (PostgreSQL)',
    rows,
    notes: [
      `Store alone: ${ROUNDS} rounds of ${APPENDS_PER_ROUND} appends of 1 KB to each of four messages in turn (a fresh ${kb(SMALL_BYTES)} one, the ${kb(LARGE_BYTES)} one grown by 16 KB appends, and the same two lengths stored whole for the rewriting statement), one process, its own SQLite file and PostgreSQL database. Reading the ${kb(results.sqlite.length)} message back whole (its content and chunks joined): SQLite ${results.sqlite.readMs.toFixed(1)} ms, PostgreSQL ${results.postgres.readMs.toFixed(1)} ms.`,
      `stopSession: ${SESSIONS} sessions of bench/stream-agent.ts (300 items a notification, 20 a second, each) on one server process on PostgreSQL, stopped one after the other once the last passed ${kb(LARGE_BYTES)} (${stop.streamedSeconds.toFixed(0)} s of streaming; messages ${stop.lengths.map(kb).join(', ')}): ${stop.stops.map((ms) => ms.toFixed(0)).join(', ')} ms.`,
      `Load average ${os.loadavg().map((l) => l.toFixed(1)).join(' / ')} (1 / 5 / 15 min) at the end, on ${os.cpus().length} cores.`,
    ],
  })
} finally {
  cluster.stop()
  rmSync(sqliteDir, { recursive: true, force: true })
}
