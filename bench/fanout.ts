// `npm run bench:fanout`: cost of fanning one workspace-feed event out to many subscribers with
// the same selection set, with subscription cohorts (one execution per event) and without (one
// execution per subscriber per event, the baseline), measured in the same run.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { print } from 'graphql'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/server/app.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { createTask } from '../src/store/tasks.ts'
import { WorkspaceEventsDocument } from '../test/generated/graphql.ts'

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 200)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 50)
const adminToken = 'bench-admin-token-0123456789'

async function measure(multiplex: boolean) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-fanout-'))
  const server = await startServer(loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(dir, 'b.db')}`, ADMIN_TOKEN: adminToken }), {
    logger: pino({ level: 'silent' }),
    multiplexSubscriptions: multiplex,
  })
  try {
    const admin = await server.store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
    const workspace = await createWorkspace(server.store, 'bench', admin.id)
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'fan-out' })
    await server.projector.idle()
    const summary = (await server.projector.ensure([task.id])).get(task.id)!
    let received = 0
    let resolveAll: () => void = () => undefined
    const clients = await Promise.all(
      Array.from({ length: SUBSCRIBERS }, async () => {
        const client = createClient({ url: `${server.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${adminToken}` }, lazy: false })
        client.subscribe(
          { query: print(WorkspaceEventsDocument), variables: { workspaceId: workspace.id } },
          { next: () => ++received === SUBSCRIBERS * EVENTS && resolveAll(), error: () => undefined, complete: () => undefined },
        )
        return client
      }),
    )
    // Wait until every subscription is registered on the server.
    while ([...server.gateway.connections()].reduce((n, c) => n + c.subscriptions.size, 0) < SUBSCRIBERS) await new Promise((r) => setTimeout(r, 20))
    await new Promise((r) => setTimeout(r, 200))
    const allReceived = new Promise<void>((resolve) => (resolveAll = resolve))
    const cpuBefore = process.cpuUsage()
    const started = performance.now()
    for (let i = 0; i < EVENTS; i++)
      await server.pubsub.publish('workspace', workspace.id, {
        type: 'TaskStatusSummaryUpdated',
        workspaceId: workspace.id,
        taskId: task.id,
        revision: summary.revision + i + 1,
        updatedAt: new Date().toISOString(),
        summary: summary.payload,
        // Consecutive positions, as the database would allocate them: no subscriber sees a hole to repair.
        sequence: 1_000_000 + i,
      })
    await allReceived
    const ms = performance.now() - started
    const cpu = process.cpuUsage(cpuBefore)
    await Promise.all(clients.map((c) => c.dispose()))
    return { ms, cpuMs: (cpu.user + cpu.system) / 1000 }
  } finally {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const baseline = await measure(false)
const cohorts = await measure(true)
console.info(`${EVENTS} summary events to ${SUBSCRIBERS} subscribers of one selection set (server and clients in one process)`)
console.info(`  one execution per subscriber (baseline): ${baseline.ms.toFixed(0)} ms wall, ${baseline.cpuMs.toFixed(0)} ms CPU`)
console.info(`  cohorts, one execution per event:        ${cohorts.ms.toFixed(0)} ms wall, ${cohorts.cpuMs.toFixed(0)} ms CPU`)
console.info(`  ratio cohorts / baseline: wall ${(cohorts.ms / baseline.ms).toFixed(2)}x, CPU ${(cohorts.cpuMs / baseline.cpuMs).toFixed(2)}x`)
