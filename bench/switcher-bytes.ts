// `npm run bench:switcher`: what a task switcher pays while 26 sessions stream. One client follows
// only the workspace feed; the baseline, in the same run, also subscribes to every session's
// stream (what a switcher without summaries would have to do). Bytes and frames per summary
// revision the feed delivered; goal ≤ 1 KB per revision and ≥ 30× less than the baseline.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/server/app.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { createTask } from '../src/store/tasks.ts'
import { SessionEventsDocument, WorkspaceEventsDocument } from '../test/generated/graphql.ts'
import { countingClient } from './support.ts'

const TASKS = 27
const STREAMING = 26
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 3000)
const adminToken = 'bench-admin-token-0123456789'


function follow(client: Client, query: string, variables: Record<string, unknown>, onNext: (data: unknown) => void = () => undefined) {
  client.subscribe({ query, variables }, { next: (r) => onNext(r.data), error: () => undefined, complete: () => undefined })
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-switcher-'))
const server = await startServer(loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(dir, 'b.db')}`, ADMIN_TOKEN: adminToken }), {
  logger: pino({ level: 'silent' }),
})
try {
  const admin = await server.store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
  const workspace = await createWorkspace(server.store, 'bench', admin.id)
  const tasks: Awaited<ReturnType<typeof createTask>>[] = []
  for (let i = 0; i < TASKS; i++) tasks.push(await createTask(server.store, { workspaceId: workspace.id, title: `task ${i}` }))
  const sessions = await Promise.all(
    tasks.slice(0, STREAMING).map((t) => server.sessions.startSession({ taskId: t.id, agentProfile: 'mock' })),
  )
  await server.projector.idle()

  const wsUrl = `${server.url.replace('http', 'ws')}/graphql`
  let revisions = 0
  const switcher = countingClient(wsUrl, adminToken)
  const everything = countingClient(wsUrl, adminToken)
  const feed = print(WorkspaceEventsDocument)
  follow(switcher.client, feed, { workspaceId: workspace.id }, (data) => {
    if ((data as { workspaceEvents?: { __typename: string } })?.workspaceEvents?.__typename === 'TaskStatusSummaryUpdated') revisions++
  })
  follow(everything.client, feed, { workspaceId: workspace.id })
  for (const s of sessions) follow(everything.client, print(SessionEventsDocument), { sessionId: s.id })
  const subscriptions = 2 + STREAMING
  while ([...server.gateway.connections()].reduce((n, c) => n + c.subscriptions.size, 0) < subscriptions) await new Promise((r) => setTimeout(r, 20))
  await new Promise((r) => setTimeout(r, 300))
  for (const t of [switcher.tally, everything.tally]) Object.assign(t, { bytes: 0, frames: 0 })

  const script = JSON.stringify({
    script: [
      { think: 'planning the change', chunks: 20 },
      { tool: { title: 'Read file', kind: 'read', status: 'completed' } },
      { stream: { kind: 'message', count: CHUNKS } },
    ],
  })
  const started = performance.now()
  await Promise.all(sessions.map((s, i) => server.sessions.addMessage({ taskId: tasks[i]!.id, sessionId: s.id, clientMessageId: randomUUID(), content: script })))
  // Settled: every turn over, every projection done, and the sockets quiet for a moment.
  for (;;) {
    const open = await server.store.db.turn.count({ where: { completedAt: null } })
    if (open === 0) break
    await new Promise((r) => setTimeout(r, 100))
  }
  await server.projector.idle()
  let last = -1
  while (everything.tally.bytes !== last) {
    last = everything.tally.bytes
    await new Promise((r) => setTimeout(r, 500))
  }
  const seconds = (performance.now() - started) / 1000
  const perRevision = switcher.tally.bytes / Math.max(1, revisions)
  console.info(`${STREAMING} of ${TASKS} sessions streaming ${CHUNKS} chunks each (plus reasoning and a tool call), ${seconds.toFixed(1)} s`)
  console.info(`  summary revisions on the feed:            ${revisions}`)
  console.info(`  feed only (switcher):                     ${switcher.tally.frames} frames, ${(switcher.tally.bytes / 1024).toFixed(1)} KiB, ${perRevision.toFixed(0)} B per revision (goal ≤ 1024)`)
  console.info(`  feed + every session stream (baseline):   ${everything.tally.frames} frames, ${(everything.tally.bytes / 1024).toFixed(1)} KiB`)
  console.info(`  ratio baseline / switcher: bytes ${(everything.tally.bytes / switcher.tally.bytes).toFixed(1)}x (goal ≥ 30x), frames ${(everything.tally.frames / switcher.tally.frames).toFixed(1)}x`)
  await Promise.all([switcher.client.dispose(), everything.client.dispose()])
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
