// P4's seeding plus what bench/p4-profile.ts measures inside the server process: the GraphQL
// request through Yoga's fetch (no socket, no client) with its CPU time and bytes allocated, under
// the CPU profiler or the sampling heap profiler.
import { Session } from 'node:inspector/promises'
import { writeFileSync } from 'node:fs'
import type { RunningServer } from '../src/app/start-server.ts'
import { createYogaServer } from '../src/server/yoga.ts'
import { createMetrics } from '../src/observability/metrics.ts'
import { handlers as p4 } from './p4-handlers.ts'
import { phase, type Profile } from './p4-profile-split.ts'
import { floorBody } from './p4-floor.ts'
import { ensureFeedEpoch } from '../src/store/feed.ts'
import { listTasks } from '../src/store/tasks.ts'

// Not imported from server-process.ts: in the server process that module is the running child.
const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789'

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  children: HeapNode[]
}

let cpuSession: Session | undefined
let heapSession: Session | undefined

async function connect() {
  const session = new Session()
  session.connect()
  return session
}

export const handlers = {
  ...p4,
  /**
   * Requests through Yoga's fetch in this process, the same Yoga as the server's (its plugins, a
   * context per request), alternating with and without the summary selection unless `only` says
   * which. Per request: CPU time (user + system), wall time and heap growth; run with a young
   * generation large enough that no collection falls inside one request for the last to be the
   * bytes it allocated.
   */
  async inProcess(
    server: RunningServer,
    args: { workspaceId: string; withSummary: string; withoutSummary: string; first: number; iterations: number; only?: 'with' | 'without' },
  ) {
    const yoga = createYogaServer({
      store: server.store,
      pubsub: server.pubsub,
      projector: server.projector,
      sessions: server.commands,
      git: server.git,
      logger: server.logger,
      repositoryRoots: [],
      feed: { epoch: 'bench' } as never,
      access: server.access,
      agentProfiles: [],
      metrics: createMetrics(),
    })
    const gc = (globalThis as { gc?: () => void }).gc!
    const body = (query: string) => JSON.stringify({ query, variables: { workspaceId: args.workspaceId, first: args.first } })
    const bodies = { with: body(args.withSummary), without: body(args.withoutSummary) }
    const samples: Record<string, number[]> = {}
    const add = (k: string, v: number) => (samples[k] ??= []).push(v)
    for (let i = 0; i < args.iterations; i++)
      for (const kind of args.only ? [args.only] : i % 2 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
        if (!args.only) gc()
        const heap = process.memoryUsage().heapUsed
        const cpu = process.cpuUsage()
        const started = performance.now()
        const response = await yoga.fetch('http://localhost/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_ADMIN_TOKEN}` },
          body: bodies[kind],
        })
        const bytes = (await response.arrayBuffer()).byteLength
        const wall = performance.now() - started
        const used = process.cpuUsage(cpu)
        add(`${kind} cpu ms`, (used.user + used.system) / 1000)
        add(`${kind} wall ms`, wall)
        add(`${kind} allocated KB`, (process.memoryUsage().heapUsed - heap) / 1024)
        add(`${kind} response KB`, bytes / 1024)
      }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    return Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, median(xs)]))
  },
  /**
   * The floor (bench/p4-floor.ts) in this process with no HTTP: per request the CPU and wall time
   * of reading the same rows and writing their JSON by hand, with and without the summaries.
   */
  async floorInProcess(server: RunningServer, args: { workspaceId: string; first: number; iterations: number; query: 'tasks' | 'boot' }) {
    const epoch = await ensureFeedEpoch(server.store)
    const samples: Record<string, number[]> = {}
    for (let i = 0; i < args.iterations; i++)
      for (const summary of i % 2 ? [true, false] : [false, true]) {
        const kind = summary ? 'floor with' : 'floor without'
        const cpu = process.cpuUsage()
        const started = performance.now()
        await floorBody(server, epoch, { query: args.query, summary, workspaceId: args.workspaceId, first: args.first })
        const used = process.cpuUsage(cpu)
        ;(samples[`${kind} cpu ms`] ??= []).push((used.user + used.system) / 1000)
        ;(samples[`${kind} wall ms`] ??= []).push(performance.now() - started)
        // Its read alone: the page statement, with or without the summary columns.
        const read = performance.now()
        await listTasks(server.store, args.workspaceId, args.first, 'LAST_ACTIVITY', undefined, { summaries: summary })
        ;(samples[`${kind}: its read alone, wall ms`] ??= []).push(performance.now() - read)
      }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    return Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, median(xs)]))
  },
  async profileStart() {
    cpuSession = await connect()
    await cpuSession.post('Profiler.enable')
    await cpuSession.post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US ?? 100) })
    await cpuSession.post('Profiler.start')
  },
  async profileStop(_server: RunningServer, args: { file: string }) {
    const { profile } = (await cpuSession!.post('Profiler.stop')) as unknown as { profile: Profile }
    cpuSession!.disconnect()
    writeFileSync(args.file, JSON.stringify(profile))
  },
  async heapStart() {
    heapSession = await connect()
    await heapSession.post('HeapProfiler.enable')
    await heapSession.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  },
  /** Sampled bytes per request (÷ `divide`) by origin and by allocating frame (natives count to their nearest JavaScript caller). */
  async heapStop(_server: RunningServer, args: { divide: number; depth?: number }) {
    const { profile } = (await heapSession!.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: HeapNode } }
    heapSession!.disconnect()
    const byOrigin = new Map<string, number>()
    const byFrame = new Map<string, number>()
    const walk = (node: HeapNode, stack: HeapNode[]) => {
      const chain = [node, ...[...stack].reverse()]
      let origin: string | undefined
      for (const f of chain) if ((origin = phase(f.callFrame.url, f.callFrame.functionName))) break
      origin ??= 'other'
      byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + node.selfSize)
      const name = chain
        .slice(0, args.depth ?? 2)
        .map((f) => `${f.callFrame.functionName || '(anon)'}@${f.callFrame.url.split('/').slice(-2).join('/')}:${f.callFrame.lineNumber + 1}`)
        .join(' < ')
      byFrame.set(name, (byFrame.get(name) ?? 0) + node.selfSize)
      for (const child of node.children) walk(child, [...stack, node])
    }
    walk(profile.head, [])
    const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, v]) => [k, v / args.divide / 1024] as const)
    return { origins: top(byOrigin), frames: top(byFrame) }
  },
}
