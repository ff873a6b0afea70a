// `npm run bench:heap`: server heap kept per subscribe/unsubscribe cycle on one WebSocket
// connection (target ≤ 2 KB after GC over 5,000 cycles), against a baseline measured in the same
// run: the heap kept per plain query round trip on the same connection. The server runs in a child
// process (started with --expose-gc), so the client's own allocations do not count.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { print } from 'graphql'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/server/app.ts'
import { createWorkspace } from '../src/store/workspaces.ts'
import { createTask } from '../src/store/tasks.ts'
import { createSession } from '../src/store/runtime.ts'
import { rawGraphqlWs } from '../test/support/raw-ws.ts'
import { SessionEventsDocument, ViewerDocument } from '../test/generated/graphql.ts'
import { forkServer } from './support.ts'

const CYCLES = Number(process.env.BENCH_CYCLES ?? 5000)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 500)
const TARGET_BYTES = 2048
const adminToken = 'bench-admin-token-0123456789'

type Ready = { url: string; sessionId: string }
type ToServer = { type: 'heap' } | { type: 'stop' }
type FromServer = ({ type: 'ready' } & Ready) | { type: 'heap'; heapUsed: number; tables: Record<string, number> }

async function runServer() {
  const gc = (globalThis as { gc?: () => void }).gc
  if (!gc) throw new Error('the server process needs --expose-gc')
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-heap-'))
  const server = await startServer(loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(dir, 'b.db')}`, ADMIN_TOKEN: adminToken, RATE_LIMIT_SUBSCRIPTIONS: '0' }), {
    logger: pino({ level: 'silent' }),
  })
  const admin = await server.store.db.user.findFirstOrThrow({ where: { isAdmin: true } })
  const workspace = await createWorkspace(server.store, 'bench', admin.id)
  const task = await createTask(server.store, { workspaceId: workspace.id, title: 'watched' })
  const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'WAITING_FOR_INPUT' })
  const send = (message: FromServer) => process.send!(message)
  process.on('message', (message: ToServer) => {
    if (message.type === 'stop') {
      server
        .close()
        .catch((error: unknown) => console.error(error))
        .finally(() => {
          rmSync(dir, { recursive: true, force: true })
          process.exit(0)
        })
      return
    }
    // Several passes: finalizers and weak references free more on later ones.
    for (let i = 0; i < 4; i++) gc()
    send({ type: 'heap', heapUsed: process.memoryUsage().heapUsed, tables: server.gateway.tableSizes() })
  })
  send({ type: 'ready', url: server.url, sessionId: session.id })
}

async function runClient() {
  const { child, reply } = forkServer<FromServer>(fileURLToPath(import.meta.url))
  const ready = (await reply()) as Extract<FromServer, { type: 'ready' }>
  const heap = async () => {
    child.send({ type: 'heap' } satisfies ToServer)
    return (await reply()) as Extract<FromServer, { type: 'heap' }>
  }

  const client = await rawGraphqlWs(ready.url.replace('http', 'ws') + '/graphql', adminToken)
  const sessionQuery = print(SessionEventsDocument)
  const viewerQuery = print(ViewerDocument)
  let n = 0
  const query = async () => {
    const id = `q${n++}`
    client.send({ id, type: 'subscribe', payload: { query: viewerQuery } })
    await client.waitFor((f) => f.id === id && f.type === 'complete')
    client.frames.length = 0
  }
  const subscribeThenComplete = async () => {
    const id = `s${n++}`
    client.send({ id, type: 'subscribe', payload: { query: sessionQuery, variables: { sessionId: ready.sessionId } } })
    await client.waitFor((f) => f.id === id && f.type === 'next')
    client.send({ id, type: 'complete' })
    client.frames.length = 0
  }
  const keptPerCycle = async (cycle: () => Promise<void>) => {
    const before = await heap()
    for (let i = 0; i < CYCLES; i++) await cycle()
    await query() // every complete before it has been handled once its answer is back
    const after = await heap()
    return { bytes: (after.heapUsed - before.heapUsed) / CYCLES, tables: after.tables }
  }

  for (let i = 0; i < WARMUP; i++) {
    await subscribeThenComplete()
    await query()
  }
  const baseline = await keptPerCycle(query)
  const subscriptions = await keptPerCycle(subscribeThenComplete)
  client.socket.close()
  child.send({ type: 'stop' } satisfies ToServer)

  const kb = (bytes: number) => `${(bytes / 1024).toFixed(2)} KB`
  console.info(`server heap kept after GC, per cycle, over ${CYCLES} cycles on one WebSocket connection`)
  console.info(`  query round trip (baseline):   ${kb(baseline.bytes)}`)
  console.info(`  subscribe + client complete:   ${kb(subscriptions.bytes)} (target ≤ ${kb(TARGET_BYTES)})`)
  console.info(`  difference subscribe − query:  ${kb(subscriptions.bytes - baseline.bytes)}`)
  console.info(`  gateway tables afterwards:     ${JSON.stringify(subscriptions.tables)}`)
  if (subscriptions.bytes > TARGET_BYTES) process.exitCode = 1
}

if (process.argv[2] === 'server') await runServer()
else await runClient()
