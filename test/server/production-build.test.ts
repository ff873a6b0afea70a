import { execFile, execFileSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyDatabase } from '../support/databases.ts'
import { ok } from '../support/client.ts'
import { freePort } from '../support/postgres-cluster.ts'
import { alive, descendantsOf, projectRoot, spawnServer } from '../support/process.ts'
import { buildWebPage } from '../support/web-build.ts'
import { eventually } from '../support/wait.ts'
import { AddMessageDocument, CreateTaskDocument, CreateWorkspaceDocument, SessionDetailDocument, StartSessionDocument } from '../generated/graphql.ts'

// Inside the project (gitignored), like dist/: the build finds node_modules and the Prisma configs by walking up.
// `dist` in a folder of its own, so a package.json beside it can run the project's start:prod there.
const buildRoot = path.join(projectRoot, '.vitest-tmp', `build-${randomUUID()}`)
const outDir = path.join(buildRoot, 'dist')
const children: ChildProcess[] = []
/** Processes below a spawned npm: if the server outlived npm, it must not outlive the test. */
const grandchildren: number[] = []
afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
  for (const pid of grandchildren) if (alive(pid)) process.kill(pid, 'SIGKILL')
  rmSync(buildRoot, { recursive: true, force: true })
})

const scripts = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts

beforeAll(async () => {
  // The build script with another outDir, so the test never replaces a dist/ someone runs.
  await promisify(execFile)(process.execPath, [path.join(projectRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: projectRoot })
  await buildWebPage(path.join(outDir, 'web'))
}, 120_000)

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)

describe('the production build', () => {
  it('is what `npm run build` / `npm run start:prod` run: compiled output on plain node migrates, serves, and runs the mock agent without tsx', { timeout: 120_000 }, async () => {
    expect(scripts.build).toBe('tsc -p tsconfig.build.json && npm run build:web')
    expect(scripts['build:web']).toBe('npm run build:client --silent && vite build') // the SDK package the page imports, then the page into dist/web: beside the compiled server
    // exec: npm's shell becomes the server, so the signals npm forwards reach it (next test).
    expect(scripts['start:prod']).toBe('exec node dist/main.js')

    const port = await freePort()
    const adminToken = 'production-build-admin-token-0123456789'
    // A fresh database: the migrations must run from the build output.
    const run = spawnServer([path.join(outDir, 'main.js')], { PORT: String(port), DATABASE_URL: await emptyDatabase('sqlite'), ADMIN_TOKEN: adminToken }, children)
    await run.ready(port)
    expect(run.output().stdout).toContain('"migrations applied"')
    expect(cmdline(run.child.pid!)).toEqual([process.execPath, path.join(outDir, 'main.js')])

    const url = `http://127.0.0.1:${port}/graphql`
    const html = await (await fetch(url, { headers: { accept: 'text/html' } })).text()
    const stylesheet = /href="(\/graphiql\/[^"]+\.css)"/.exec(html)?.[1]
    expect(stylesheet).toBeDefined()
    expect((await fetch(`http://127.0.0.1:${port}${stylesheet}`)).status).toBe(200)
    // The page, from the web folder beside the compiled server.
    const page = await fetch(`http://127.0.0.1:${port}/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toMatch(/<script type="module" crossorigin src="\/assets\/[^"]+\.js"/)

    const workspaceId = (await ok(url, adminToken, CreateWorkspaceDocument, { name: 'prod' })).createWorkspace.id
    const taskId = (await ok(url, adminToken, CreateTaskDocument, { input: { workspaceId, title: 't' } })).createTask.id
    const sessionId = (await ok(url, adminToken, StartSessionDocument, { input: { taskId } })).startSession.id
    await ok(url, adminToken, AddMessageDocument, { input: { taskId, sessionId, clientMessageId: randomUUID(), content: 'count' } })
    const reply = await eventually(async () => {
      const session = (await ok(url, adminToken, SessionDetailDocument, { id: sessionId, last: 10 })).session!
      return session.messages.find((m) => m.author === 'AGENT' && m.content === 'prompts received: 1')
    })
    expect(reply.content).toBe('prompts received: 1')

    const [agent] = execFileSync('pgrep', ['-P', String(run.child.pid)], { encoding: 'utf8' }).trim().split('\n').map(Number)
    expect(cmdline(agent!)).toEqual([process.execPath, path.join(outDir, 'agents', 'mock', 'mock-agent.js')])

    run.child.kill('SIGTERM')
    expect(await run.exited).toBe(0)
  })
})

/** The commands of README "Production", as written there. */
function productionCommands(): string[] {
  const readme = readFileSync(path.join(projectRoot, 'README.md'), 'utf8')
  const block = /^### Production\n+```sh\n([^`]+)```/m.exec(readme)?.[1]
  expect(block, 'README "Production" opens with a sh block').toBeDefined()
  return block!.trim().split('&&').map((command) => command.trim())
}

describe('the production command under a supervisor', () => {
  it('`npm run start:prod`, as README "Production" runs it: SIGTERM to the npm process the supervisor holds stops the server gracefully', { timeout: 60_000 }, async () => {
    const commands = productionCommands()
    expect(commands.slice(0, -1)).toEqual(['npm ci', 'npm run build']) // the build is the beforeAll's, into a folder of its own
    const [command, ...args] = commands.at(-1)!.split(/\s+/)
    expect([command, ...args]).toEqual(['npm', 'run', 'start:prod'])
    // A package beside the build with the project's own start:prod script: npm runs it there.
    writeFileSync(path.join(buildRoot, 'package.json'), JSON.stringify({ name: 'production-command', private: true, type: 'module', scripts: { 'start:prod': scripts['start:prod'] } }))

    const port = await freePort()
    const env = { PORT: String(port), DATABASE_URL: await emptyDatabase('sqlite'), ADMIN_TOKEN: 'production-command-admin-token-0123' }
    const run = spawnServer(args, env, children, { command: command!, cwd: buildRoot })
    await run.ready(port)
    const held = run.child.pid!
    const processes = descendantsOf(held)
    grandchildren.push(...processes)
    expect(processes.map((pid) => cmdline(pid).slice(-1)[0])).toContain('dist/main.js')

    run.child.kill('SIGTERM')
    const outcome = await Promise.race([run.exited, new Promise((resolve) => setTimeout(() => resolve('still running after 15 s'), 15_000))])
    expect(outcome, run.output().stderr).toBe(0)
    const logs = run.output().stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { msg: string; signal?: string })
    expect(logs).toContainEqual(expect.objectContaining({ msg: 'signal received', signal: 'SIGTERM' }))
    expect(logs.at(-1)).toMatchObject({ msg: 'shut down' })
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow()
    await eventually(() => processes.every((pid) => !alive(pid)), 5_000)
  })
})
