// P12: what one Git observation of a repository costs (refreshSessionGit, and each pass of the
// Git monitor), now against before, over a realistic work tree: 300 tracked files, a feature
// branch 3 commits ahead and 2 behind its base, 12 files edited, 3 staged new, 6 untracked (one
// binary), an ignored folder. Per observation: the Git processes started, and CPU = the Git
// children's user+sys (/proc/self/stat cutime+cstime, which counts every waited-for child) plus
// this process's own (process.cpuUsage). Each round runs the old observation (before), the new
// one (after) and the floor (one `git rev-parse HEAD`) back to back, so load that comes and goes
// falls on each alike. Then the Git monitor's cost with 27 idle running sessions (one work tree
// each, nothing changing): passes driven by a clock advanced one slow interval each, the CPU of
// that bounded window scaled to a minute of the monitor's real schedule.
// Short (BENCH_SHORT=1): 60 files, one round, 3 sessions for one pass; no goal judged.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { loadConfig } from '../src/config/config.ts'
import { startServer } from '../src/app/start-server.ts'
import { git, gitProcesses } from '../src/git/git-cli.ts'
import { observeRepositoryLegacy } from '../src/git/legacy-observe.ts'
import { GitMonitor } from '../src/git/monitor.ts'
import { observeRepository } from '../src/git/observe.ts'
import { createSession } from '../src/store/sessions.ts'
import { createTask } from '../src/store/tasks.ts'
import { report, type Row } from './scenario.ts'
import { adminWorkspace } from './seed.ts'

const SHORT = process.env.BENCH_SHORT === '1'
const FILES = SHORT ? 60 : 300
const ROUNDS = Number(process.env.BENCH_P12_ROUNDS ?? (SHORT ? 1 : 20))
const SESSIONS = SHORT ? 3 : 27
const PASSES = SHORT ? 1 : 2
const GOAL_PROCESSES = 3
const GOAL_CPU_MS = 30

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100)

/** CPU of this process and of its reaped children so far, in ms. */
function cpu(): { own: number; children: number } {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ').at(-1)!.split(' ')
  const { user, system } = process.cpuUsage()
  return { own: (user + system) / 1000, children: (Number(fields[13]) + Number(fields[14])) * TICK_MS }
}

interface Cost {
  processes: number
  ownMs: number
  childrenMs: number
  wallMs: number[]
}
const cost = (): Cost => ({ processes: 0, ownMs: 0, childrenMs: 0, wallMs: [] })

async function measure<T>(into: Cost, work: () => Promise<T>): Promise<T> {
  const [started, cpuBefore, wallBefore] = [gitProcesses.started, cpu(), performance.now()]
  const result = await work()
  const cpuAfter = cpu()
  into.wallMs.push(performance.now() - wallBefore)
  into.processes += gitProcesses.started - started
  into.ownMs += cpuAfter.own - cpuBefore.own
  into.childrenMs += cpuAfter.children - cpuBefore.children
  return result
}

const perRun = (c: Cost, runs: number) => ({ processes: c.processes / runs, cpuMs: (c.ownMs + c.childrenMs) / runs, ownMs: c.ownMs / runs, childrenMs: c.childrenMs / runs })
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!

/** The realistic work tree: a few hundred files, a feature branch with committed and uncommitted work. */
function workTree(root: string): string {
  const dir = path.join(root, 'repo')
  const run = (...args: string[]) => execFileSync('git', ['-C', dir, '-c', 'user.email=b@example.com', '-c', 'user.name=b', ...args])
  const file = (i: number) => path.join(dir, `src/m${i % 20}/f${i}.ts`)
  const body = (i: number, version: number) => Array.from({ length: 40 }, (_, l) => `export const v${i}_${l} = ${l * version}\n`).join('')
  mkdirSync(dir)
  run('init', '-q', '-b', 'main')
  for (let i = 0; i < 20; i++) mkdirSync(path.join(dir, `src/m${i}`), { recursive: true })
  for (let i = 0; i < FILES; i++) writeFileSync(file(i), body(i, 1))
  writeFileSync(path.join(dir, '.gitignore'), 'node_modules/\n*.log\n')
  writeFileSync(path.join(dir, '.gitattributes'), '* text=auto\n')
  run('add', '-A')
  run('commit', '-qm', 'init')
  run('checkout', '-q', '-b', 'feature')
  for (let c = 0; c < 3; c++) {
    for (let i = c; i < FILES; i += 37) writeFileSync(file(i), body(i, 2 + c))
    run('commit', '-qam', `feature ${c}`)
  }
  run('checkout', '-q', 'main')
  for (let c = 0; c < 2; c++) {
    writeFileSync(file(FILES - 1 - c), body(FILES - 1 - c, 9))
    run('commit', '-qam', `main ${c}`)
  }
  run('checkout', '-q', 'feature')
  for (let i = 5; i < FILES; i += Math.ceil(FILES / 12)) writeFileSync(file(i), body(i, 7))
  for (let i = 0; i < 3; i++) writeFileSync(path.join(dir, `src/m${i}/staged${i}.ts`), body(i, 3))
  run('add', 'src/m0/staged0.ts', 'src/m1/staged1.ts', 'src/m2/staged2.ts')
  for (let i = 0; i < 5; i++) writeFileSync(path.join(dir, `src/m${i}/new${i}.ts`), body(i, 4))
  writeFileSync(path.join(dir, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 13]))
  mkdirSync(path.join(dir, 'node_modules/pkg'), { recursive: true })
  for (let i = 0; i < 50; i++) writeFileSync(path.join(dir, `node_modules/pkg/x${i}.js`), body(i, 1))
  writeFileSync(path.join(dir, 'debug.log'), 'ignored\n')
  return dir
}

const root = mkdtempSync(path.join(os.tmpdir(), 'tss-p12-'))
const server = await startServer(loadConfig({ PORT: '0', DATABASE_URL: `file:${path.join(root, 'p12.db')}`, ADMIN_TOKEN: 'bench-admin-token-0123456789' }), {
  logger: pino({ level: 'silent' }),
})
try {
  const repo = workTree(root)
  const before = await observeRepositoryLegacy(repo, 'main')
  const after = await observeRepository(repo, 'main')
  if (JSON.stringify(before) !== JSON.stringify(after)) throw new Error(`results differ: before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`)

  // One observation each (what refreshSessionGit runs per repository), rounds interleaved, after
  // one unmeasured round that compiles the code paths.
  await git(repo, ['rev-parse', 'HEAD'])
  const [old, now, floor] = [cost(), cost(), cost()]
  for (let round = 0; round < ROUNDS; round++) {
    await measure(old, () => observeRepositoryLegacy(repo, 'main'))
    await measure(now, () => observeRepository(repo, 'main'))
    await measure(floor, () => git(repo, ['rev-parse', 'HEAD']))
  }
  const [o, n, f] = [perRun(old, ROUNDS), perRun(now, ROUNDS), perRun(floor, ROUNDS)]

  // The monitor over idle running sessions: each passes once per slow interval (nobody focused).
  const workspace = await adminWorkspace(server.store, 'p12')
  const live: string[] = []
  for (let i = 0; i < SESSIONS; i++) {
    const clone = path.join(root, `clone${i}`)
    execFileSync('git', ['clone', '-q', '--local', '--branch', 'feature', repo, clone])
    execFileSync('git', ['-C', clone, 'branch', '-q', '--no-track', 'main', 'origin/main'])
    execFileSync('git', ['-C', clone, 'branch', '-q', '--unset-upstream'])
    writeFileSync(path.join(clone, 'src/m0/f0.ts'), 'edited\n') // idle, but not clean
    writeFileSync(path.join(clone, 'NOTES.md'), 'untracked\n')
    const task = await createTask(server.store, { workspaceId: workspace.id, title: `t${i}`, repositories: [{ name: `r${i}`, localPath: clone, baseBranch: 'main' }] })
    live.push((await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'RUNNING' })).id)
  }
  const monitors = { before: cost(), after: cost() }
  let slowMs = 30_000
  let fastMs = 3_000
  for (const which of ['before', 'after'] as const) {
    let clock = 0
    const monitor = new GitMonitor({
      store: server.store,
      pubsub: server.pubsub,
      logger: pino({ level: 'silent' }),
      liveSessions: () => live,
      now: () => clock,
      observe: which === 'before' ? observeRepositoryLegacy : observeRepository,
    })
    ;({ slowMs, fastMs } = monitor)
    await monitor.tick() // the first pass stores each session's totals; the idle ones after it write nothing
    for (let pass = 0; pass < PASSES; pass++) {
      clock += monitor.slowMs
      await measure(monitors[which], () => monitor.tick())
    }
    if (monitor.observations !== SESSIONS * (PASSES + 1)) throw new Error(`monitor observed ${monitor.observations} times`)
  }
  const perMinute = (c: Cost) => ((c.ownMs + c.childrenMs) / PASSES) * (60_000 / slowMs)
  const split = (c: Cost) => `${((c.childrenMs / PASSES) * (60_000 / slowMs)).toFixed(0)} + ${((c.ownMs / PASSES) * (60_000 / slowMs)).toFixed(0)}`
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' / ')
  const judged = (met: boolean) => (SHORT ? undefined : met)

  const rows: Row[] = [
    {
      metric: `Git processes per repository observation (before: ${o.processes})`,
      value: n.processes,
      unit: 'processes',
      baseline: { label: 'before, same run', value: o.processes },
      goal: `≤ ${GOAL_PROCESSES}`,
      met: judged(n.processes <= GOAL_PROCESSES),
    },
    {
      metric: `CPU per repository observation, Git children + server (${n.childrenMs.toFixed(1)} + ${n.ownMs.toFixed(1)} ms)`,
      value: n.cpuMs,
      unit: 'ms',
      baseline: { label: 'one `git rev-parse HEAD`', value: f.cpuMs },
      goal: `≤ ${GOAL_CPU_MS} ms`,
      met: judged(n.cpuMs <= GOAL_CPU_MS),
    },
    {
      metric: `CPU per repository observation before (${o.childrenMs.toFixed(1)} + ${o.ownMs.toFixed(1)} ms)`,
      value: o.cpuMs,
      unit: 'ms',
      baseline: { label: 'one `git rev-parse HEAD`', value: f.cpuMs },
    },
    { metric: 'CPU per repository observation, after vs before', value: n.cpuMs, unit: 'ms', baseline: { label: 'before, same run', value: o.cpuMs } },
    {
      metric: `Git monitor polling ${SESSIONS} idle running sessions (one pass per ${slowMs / 1000} s, ticks every ${fastMs / 1000} s): CPU per minute`,
      value: perMinute(monitors.after),
      unit: 'ms/min',
      baseline: { label: 'before, same run', value: perMinute(monitors.before) },
    },
  ]
  report({
    id: 'P12',
    title: `Git observations: processes and CPU per repository observation, and the monitor's idle polling (${ROUNDS} rounds, ${FILES}-file work tree)`,
    rows,
    notes: [
      `Per observation: Git children ${n.childrenMs.toFixed(1)} ms after, ${o.childrenMs.toFixed(1)} ms before; server ${n.ownMs.toFixed(1)} ms after, ${o.ownMs.toFixed(1)} ms before. Wall p50 / p99: after ${quantile(now.wallMs, 0.5).toFixed(0)} / ${quantile(now.wallMs, 0.99).toFixed(0)} ms, before ${quantile(old.wallMs, 0.5).toFixed(0)} / ${quantile(old.wallMs, 0.99).toFixed(0)} ms, the floor ${quantile(floor.wallMs, 0.5).toFixed(0)} ms. Children's CPU is read from /proc/self/stat in ${TICK_MS} ms ticks, summed over every round.`,
      `After: \`git status --porcelain=v2 --branch\` (untracked files, unborn HEAD, ahead/behind against an upstream), \`git diff --numstat --merge-base <base>\`, and \`git rev-list --left-right --count\` only without an upstream; untracked files' lines counted in the server. Before: rev-parse ×3, merge-base, diff, ls-files, rev-parse @{upstream}, rev-list, and one \`git diff --no-index\` per untracked file.`,
      `Monitor: ${SESSIONS} sessions, one clone of the work tree each (an edit and an untracked file, nothing changing between passes), ${PASSES} passes measured after a first one, each pass the work of one slow interval (${slowMs / 1000} s); per minute = CPU per pass × ${60_000 / slowMs}. The ticks in between find nothing due. Per minute, Git children + server: after ${split(monitors.after)}, before ${split(monitors.before)} ms (the server's part includes the monitor's store reads; a pass observes the ${SESSIONS} sessions concurrently).`,
      `Three processes cost at least three of the floor's one: after ÷ floor = ${(n.cpuMs / f.cpuMs).toFixed(1)}, of which ${n.processes.toFixed(0)} process starts; under a loaded machine each start costs the server's own CPU too (fork and pipes of a large process).`,
      `Load average ${load} (1 / 5 / 15 min) at the end, on ${os.cpus().length} cores; git ${execFileSync('git', ['--version'], { encoding: 'utf8' }).trim().replace('git version ', '')}.`,
    ],
  })
} finally {
  await server.close()
  rmSync(root, { recursive: true, force: true })
}
