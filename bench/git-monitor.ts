// `npm run bench:git`: how the Git monitor's cost grows with the number of running sessions.
// One monitor pass over N sessions (one real repository each, with a change to find), for
// N = 1, 10 and 40; the single-session pass is the baseline measured in the same run.
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/app/start-server.ts'
import { GitMonitor } from '../src/git/monitor.ts'
import { createTask } from '../src/store/tasks.ts'
import { createSession } from '../src/store/sessions.ts'
import { gitRepo } from '../test/support/git-repo.ts'
import { adminWorkspace } from './seed.ts'

const dir = mkdtempSync(path.join(os.tmpdir(), 'tss-gitbench-'))
const server = await startServer(loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(dir, 'b.db')}`, ADMIN_TOKEN: 'bench-admin-token-0123456789' }), {
  logger: pino({ level: 'silent' }),
})
try {
  const workspace = await adminWorkspace(server.store, 'bench')
  const sessions: { id: string; write: (n: number) => void }[] = []
  for (let i = 0; i < 40; i++) {
    const repo = gitRepo({ 'a.txt': 'a\n' })
    const task = await createTask(server.store, { workspaceId: workspace.id, title: `t${i}`, repositories: [{ name: `r${i}`, localPath: repo.dir, baseBranch: 'main' }] })
    const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })
    sessions.push({ id: session.id, write: (n) => repo.write('a.txt', 'a\n'.repeat(n)) })
  }
  const results: [number, number][] = []
  for (const n of [1, 10, 40]) {
    const live = sessions.slice(0, n)
    let round = 2
    const monitor = new GitMonitor({ store: server.store, pubsub: server.pubsub, logger: pino({ level: 'silent' }), liveSessions: () => live.map((s) => s.id), now: () => round * 60_000 })
    const times: number[] = []
    for (; round < 7; round++) {
      for (const s of live) s.write(round) // every pass finds a change to store
      const started = performance.now()
      await monitor.tick()
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    results.push([n, times[Math.floor(times.length / 2)]!])
  }
  const base = results[0]![1]
  console.info('Git monitor: one pass over N running sessions (median of 5 passes, each finding a change)')
  for (const [n, ms] of results) console.info(`  N=${n}: ${ms.toFixed(1)} ms (${(ms / n).toFixed(1)} ms per session), ${(ms / base).toFixed(1)}x the single-session pass`)
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
