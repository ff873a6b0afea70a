// Where P4's time goes, measured inside the server process: the SDK's list operation (QUERY=tasks
// or boot) through Yoga's fetch, with and without the summary selection. Not a P row: the figures
// of `npm run bench:p4` are end to end; these take the server's share apart.
//   MODE=time  per request: CPU time, wall time, bytes allocated, response size (medians), and
//              the hand-built floor's CPU and wall time (bench/p4-floor.ts, no HTTP)
//   MODE=cpu   CPU profile of each, split by origin (bench/p4-profile-split.ts): with, without, extra
//   MODE=heap  sampled allocations of each, by origin and by allocating frame
// Env: PROVIDER=sqlite|postgres, HISTORY (messages), ITERATIONS, PROFILE_DIR keeps the .cpuprofile files.
// `tsx bench/p4-profile.ts`
import { mkdtempSync, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { deployMigrations } from '../src/store/migrate.ts'
import { BOOT_PAGE_SIZE } from '../packages/client/src/task-client.ts'
import { startPostgresCluster } from '../test/support/postgres-cluster.ts'
import { startBenchServer } from './server-process.ts'
import { OPERATIONS } from './p4-operations.ts'
import { TASKS } from './p4-handlers.ts'
import { split, type Profile } from './p4-profile-split.ts'

const MODE = process.env.MODE ?? 'cpu'
const PROVIDER = process.env.PROVIDER ?? 'sqlite'
const HISTORY = Number(process.env.HISTORY ?? 0)
const QUERY = (process.env.QUERY ?? 'tasks') as keyof typeof OPERATIONS
const FIRST = QUERY === 'tasks' ? TASKS : BOOT_PAGE_SIZE
const ITERATIONS = Number(process.env.ITERATIONS ?? (MODE === 'heap' ? 20 : 60))
const DIR = process.env.PROFILE_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'p4-profile-'))

const cluster = PROVIDER === 'postgres' ? await startPostgresCluster() : undefined
if (cluster) {
  await cluster.query('CREATE DATABASE p4_profile')
  await deployMigrations('postgres', cluster.url('p4_profile'))
}
const server = await startBenchServer({
  env: { ...(cluster ? { DATABASE_URL: cluster.url('p4_profile') } : {}), SESSION_LEASE_MS: '3600000' },
  handlers: new URL('./p4-profile-handlers.ts', import.meta.url),
  start: { skipMigrations: !!cluster },
  // A young generation no request fills: MODE=time reads each request's allocation from the heap.
  execArgv: MODE === 'time' ? ['--min-semi-space-size=256', '--max-semi-space-size=256'] : [],
})
const fmt = (n: number) => n.toFixed(2).padStart(8)
try {
  const workspaceId = await server.call<string>('seed', { history: HISTORY })
  const op = OPERATIONS[QUERY]
  const args = { workspaceId, withSummary: op.withSummary, withoutSummary: op.withoutSummary, first: FIRST }
  // Warm-up; the first read also derives and stores every summary.
  await server.call('inProcess', { ...args, iterations: 20 })
  await server.call('idle')
  console.info(`${op.name} (first: ${FIRST}), ${PROVIDER}, ${HISTORY} messages, ${ITERATIONS} requests of each`)
  if (MODE === 'time') {
    const result = await server.call<Record<string, number>>('inProcess', { ...args, iterations: ITERATIONS })
    for (const [k, v] of Object.entries(result)) console.info(`${fmt(v)}  ${k}`)
    // The hand-built floor of P4 (bench/p4-floor.ts), here with no HTTP: the server's share of it.
    const floor = await server.call<Record<string, number>>('floorInProcess', { workspaceId, first: FIRST, iterations: ITERATIONS, query: QUERY })
    for (const [k, v] of Object.entries(floor)) console.info(`${fmt(v)}  ${k}`)
  } else if (MODE === 'cpu') {
    const phases: Record<string, Map<string, number>> = {}
    for (const only of ['with', 'without'] as const) {
      const file = path.join(DIR, `p4-${PROVIDER}-${QUERY}-${only}.cpuprofile`)
      await server.call('profileStart')
      await server.call('inProcess', { ...args, iterations: ITERATIONS, only })
      await server.call('profileStop', { file })
      phases[only] = new Map(split(JSON.parse(readFileSync(file, 'utf8')) as Profile, ITERATIONS))
    }
    const w = phases.with!, wo = phases.without!
    const rows = [...new Set([...w.keys(), ...wo.keys()])].filter((k) => k !== 'idle').map((k) => [k, w.get(k) ?? 0, wo.get(k) ?? 0] as const)
    const extra = rows.reduce((n, [, a, b]) => n + a - b, 0)
    console.info('ms per request (profiled):     with  without    extra  share of extra')
    for (const [k, a, b] of rows.sort((x, y) => y[1] - y[2] - (x[1] - x[2])))
      if (a > 0.05 || b > 0.05) console.info(`${fmt(a)} ${fmt(b)} ${fmt(a - b)} ${(((a - b) / extra) * 100).toFixed(0).padStart(5)} %  ${k}`)
    const total = (m: Map<string, number>) => [...m].filter(([k]) => k !== 'idle').reduce((n, [, v]) => n + v, 0)
    console.info(`${fmt(total(w))} ${fmt(total(wo))} ${fmt(extra)}   100 %  total (idle left out); profiles in ${DIR}`)
  } else {
    for (const only of ['with', 'without'] as const) {
      await server.call('heapStart')
      await server.call('inProcess', { ...args, iterations: ITERATIONS, only })
      const r = await server.call<{ origins: [string, number][]; frames: [string, number][] }>('heapStop', { divide: ITERATIONS })
      console.info(`\n${only}: KB allocated per request, by origin`)
      for (const [k, kb] of r.origins) if (kb > 10) console.info(`${kb.toFixed(0).padStart(7)}  ${k}`)
      console.info('  by allocating frame')
      for (const [k, kb] of r.frames.slice(0, 15)) console.info(`${kb.toFixed(0).padStart(7)}  ${k}`)
    }
  }
} finally {
  await server.stop()
  cluster?.stop()
}
