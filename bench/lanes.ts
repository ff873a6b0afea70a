// `npm run bench:lanes`: p50 / p99 of a mutation round trip over a WebSocket whose session stream
// is flooded by the mock agent (30,000 chunks), with the delivery lanes on and with a plain FIFO
// (the baseline), measured in the same run. The client reads like a busy browser: it stops
// reading for a few milliseconds after every frame (rendering), so the server's queues fill.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { print } from 'graphql'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/server/app.ts'
import { DEFAULT_LIMITS } from '../src/delivery/outbound-scheduler.ts'
import { createTask } from '../src/store/tasks.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { rawGraphqlWs } from '../test/support/raw-ws.ts'
import { AddMessageDocument, FocusSessionDocument, SessionEventsDocument, StartSessionDocument } from '../test/generated/graphql.ts'

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 30000)
const RENDER_MS = Number(process.env.BENCH_RENDER_MS ?? 100)
const adminToken = 'bench-admin-token-0123456789'

async function measure(fifo: boolean) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-lanes-'))
  const server = await startServer(loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(dir, 'b.db')}`, ADMIN_TOKEN: adminToken, RATE_LIMIT_MUTATIONS: '0' }), {
    logger: pino({ level: 'silent' }),
    deliveryLimits: { ...DEFAULT_LIMITS, fifo },
  })
  try {
    const admin = await server.store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
    const workspace = await createWorkspace(server.store, 'bench', admin.id)
    const task = await createTask(server.store, { workspaceId: workspace.id, title: 'flood' })
    const gql = async (query: string, variables: object) =>
      (await (await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` }, body: JSON.stringify({ query, variables }) })).json()) as { data: { startSession: { id: string } } }
    const sessionId = (await gql(print(StartSessionDocument), { input: { taskId: task.id } })).data.startSession.id

    const client = await rawGraphqlWs(server.url.replace('http', 'ws') + '/graphql', adminToken)
    // A busy reader: after each frame, stop reading for RENDER_MS.
    client.socket.on('message', () => {
      client.pauseReading()
      setTimeout(() => client.resumeReading(), RENDER_MS)
    })
    client.subscribe('events', SessionEventsDocument, { sessionId })
    await client.waitFor((f) => f.id === 'events')
    await gql(print(AddMessageDocument), {
      input: { taskId: task.id, sessionId, clientMessageId: randomUUID(), content: JSON.stringify({ script: [{ stream: { kind: 'message', count: CHUNKS } }] }) },
    })
    const rtts: number[] = []
    let n = 0
    for (;;) {
      const done = client.frames.some((f) => f.id === 'events' && JSON.stringify(f.payload).includes('"TurnCompleted"'))
      if (done && rtts.length >= 20) break
      const id = `m${n++}`
      const started = performance.now()
      client.send({ id, type: 'subscribe', payload: { query: print(FocusSessionDocument), variables: { sessionId } } })
      await client.waitFor((f) => f.id === id && f.type === 'next')
      rtts.push(performance.now() - started)
      await new Promise((r) => setTimeout(r, 20))
      if (n > 2000) break
    }
    client.socket.terminate()
    rtts.sort((a, b) => a - b)
    const pick = (q: number) => rtts[Math.min(rtts.length - 1, Math.floor(rtts.length * q))]!
    return { p50: pick(0.5), p99: pick(0.99), samples: rtts.length }
  } finally {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const lanes = await measure(false)
const fifo = await measure(true)
console.info(`mutation round trip on a connection flooded by ${CHUNKS} chunks (reader renders ${RENDER_MS} ms per frame)`)
console.info(`  plain FIFO (baseline): p50 ${fifo.p50.toFixed(1)} ms, p99 ${fifo.p99.toFixed(1)} ms (${fifo.samples} samples)`)
console.info(`  delivery lanes:        p50 ${lanes.p50.toFixed(1)} ms, p99 ${lanes.p99.toFixed(1)} ms (${lanes.samples} samples)`)
console.info(`  ratio lanes / FIFO: p50 ${(lanes.p50 / fifo.p50).toFixed(2)}x, p99 ${(lanes.p99 / fifo.p99).toFixed(2)}x`)
