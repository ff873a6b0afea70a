// `npm run bench`: tasks(first: 500) on the embedded default (SQLite), with and without every
// task's statusSummary, on a real server over HTTP. Reports medians and the ratio of the two
// (the list without summaries is the baseline, measured in the same run), and the statement
// count of each request.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/server/app.ts'
import { createTask } from '../src/store/tasks.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { addMessage, createSession, startTurn } from '../src/store/runtime.ts'

const TASKS = 500
const RUNS = Number(process.env.BENCH_RUNS ?? 40)

const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-bench-'))
const adminToken = 'bench-admin-token-0123456789'
let statements = 0
const server = await startServer(
  loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(dir, 'bench.db')}`, ADMIN_TOKEN: adminToken }),
  { logger: pino({ level: 'silent' }), onQuery: () => statements++ },
)

try {
  const admin = await server.store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
  const workspace = await createWorkspace(server.store, 'bench', admin.id)
  for (let i = 0; i < TASKS; i++) {
    const task = await createTask(server.store, { workspaceId: workspace.id, title: `task ${i}` })
    if (i % 3 === 0) {
      const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
      const turn = await startTurn(server.store, { sessionId: session.id })
      await addMessage(server.store, { id: `m-${i}`, sessionId: session.id, turnId: turn.id, author: 'USER', kind: 'MESSAGE', content: 'go' })
    }
  }
  await server.projector.idle()

  const fields = 'id title statusSummary { revision lastActivityAt primarySession { id state } foregroundActivity pendingAction activeError { stamp } git { additions } pullRequest { aggregateState } }'
  const query = (withSummary: boolean) =>
    `{ tasks(workspaceId: "${workspace.id}", first: ${TASKS}) { edges { node { ${withSummary ? fields : 'id title'} } } } }`

  async function measure(withSummary: boolean) {
    const times: number[] = []
    let perRequest = 0
    for (let i = 0; i < RUNS; i++) {
      statements = 0
      const started = performance.now()
      const response = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
        body: JSON.stringify({ query: query(withSummary) }),
      })
      const body = (await response.json()) as { errors?: unknown; data?: { tasks: { edges: unknown[] } } }
      times.push(performance.now() - started)
      if (body.errors || body.data?.tasks.edges.length !== TASKS) throw new Error(JSON.stringify(body.errors))
      perRequest = statements
    }
    times.sort((a, b) => a - b)
    return { median: times[Math.floor(times.length / 2)]!, p90: times[Math.floor(times.length * 0.9)]!, statements: perRequest }
  }

  await measure(true) // warm-up
  const baseline = await measure(false)
  const withSummaries = await measure(true)
  console.info(`tasks(first: ${TASKS}) on SQLite, ${RUNS} runs each`)
  console.info(`  baseline (no statusSummary): median ${baseline.median.toFixed(1)} ms, p90 ${baseline.p90.toFixed(1)} ms, ${baseline.statements} statements`)
  console.info(`  with every statusSummary:    median ${withSummaries.median.toFixed(1)} ms, p90 ${withSummaries.p90.toFixed(1)} ms, ${withSummaries.statements} statements`)
  console.info(`  ratio (median): ${(withSummaries.median / baseline.median).toFixed(2)}x the baseline`)
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
