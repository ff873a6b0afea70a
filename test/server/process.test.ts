import { execFileSync, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { emptyDatabase, PROVIDERS, tempDir } from '../support/databases.ts'
import { freePort } from '../support/postgres-cluster.ts'
import { alive, spawnServer } from '../support/process.ts'
import { eventually } from '../support/wait.ts'

const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL')
})

/** `npm start`'s command as a real child process; `listening` once it logs that it listens. */
function startProcess(env: Record<string, string>) {
  const run = spawnServer(['--import', 'tsx', 'src/main.ts'], env, children)
  const listening = new Promise<void>((resolve, reject) => {
    run.child.stdout!.on('data', () => run.output().stdout.includes('"server listening"') && resolve())
    void run.exited.then((code) => reject(new Error(`exited ${code}: ${run.output().stderr}`)))
  })
  listening.catch(() => undefined) // awaited by the tests that expect a start; others watch `exited`
  /** Listening and past startup recovery: GraphQL answers 503 UNAVAILABLE before that. */
  const ready = listening.then(() => run.ready(Number(env.PORT)))
  ready.catch(() => undefined)
  return { ...run, listening, ready }
}

const viewer = (port: number, token: string) =>
  fetch(`http://127.0.0.1:${port}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: '{ viewer { user { id name } } }' }),
  }).then((r) => r.json() as Promise<{ data?: { viewer: { user: { name: string } } } }>)

describe.each(PROVIDERS)('the server process (%s)', (provider) => {
  it('migrates a fresh database, prints a generated admin token once, keeps it valid across restarts, exits 0 on SIGTERM', async () => {
    const databaseUrl = await emptyDatabase(provider)
    const port = await freePort()
    const env = { DATABASE_URL: databaseUrl, PORT: String(port) }

    const first = startProcess(env)
    await first.ready
    const token = /Admin token[^\n]*\n\s*\n\s*(\S+)/.exec(first.output().stderr)?.[1]
    expect(token).toMatch(/^tss_/)
    expect((await viewer(port, token!)).data?.viewer.user.name).toBe('admin')
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200)
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    expect(metrics).toContain('graphql_request_duration_seconds_count')
    const graphiql = await fetch(`http://127.0.0.1:${port}/graphql`, { headers: { accept: 'text/html' } })
    expect(await graphiql.text()).toMatch(/graphiql/i)
    first.child.kill('SIGTERM')
    expect(await first.exited).toBe(0)
    // Logs are JSON lines and never carry the token.
    for (const line of first.output().stdout.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow()
    expect(first.output().stdout).not.toContain(token!)

    const second = startProcess(env)
    await second.ready
    expect(second.output().stderr).not.toContain('Admin token')
    expect((await viewer(port, token!)).data?.viewer.user.name).toBe('admin')
    second.child.kill('SIGINT')
    expect(await second.exited).toBe(0)
  })
})

describe('agent processes at shutdown', () => {
  it('SIGTERM ends every agent child process and exits 0', { timeout: 30_000 }, async () => {
    const port = await freePort()
    const adminToken = 'shutdown-admin-token-0123456789'
    const run = startProcess({ ADMIN_TOKEN: adminToken, PORT: String(port), DATABASE_URL: `file:${path.join(tempDir('shutdown'), 'app.db')}` })
    await run.ready
    const gql = async (query: string) =>
      (await (
        await fetch(`http://127.0.0.1:${port}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
          body: JSON.stringify({ query }),
        })
      ).json()) as { data: Record<string, { id: string }> }
    const workspace = (await gql('mutation { createWorkspace(name: "w") { id } }')).data.createWorkspace!.id
    const task = (await gql(`mutation { createTask(input: { workspaceId: "${workspace}", title: "t" }) { id } }`)).data.createTask!.id
    await gql(`mutation { startSession(input: { taskId: "${task}" }) { id } }`)
    await gql(`mutation { startSession(input: { taskId: "${task}" }) { id } }`)
    const children = (...filter: string[]) =>
      execFileSync('pgrep', ['-P', String(run.child.pid), ...filter], { encoding: 'utf8' }).trim().split('\n').map(Number)
    expect(children('-f', 'mock-agent')).toHaveLength(2)
    // The two agents and the agent watchdog (src/agents/watchdog): none outlives the server.
    const all = children()
    expect(all).toHaveLength(3)
    run.child.kill('SIGTERM')
    expect(await run.exited).toBe(0)
    await eventually(() => all.every((pid) => !alive(pid)), 10_000)
  })
})

describe('the server process configuration', () => {
  it('exits 1 with a clear message on a bad variable', async () => {
    const run = startProcess({ PORT: 'not-a-port', DATABASE_URL: `file:${path.join(tempDir('bad'), 'x.db')}` })
    expect(await run.exited).toBe(1)
    expect(run.output().stderr).toContain('Invalid configuration')
    expect(run.output().stderr).toContain('PORT')
  })

  it('accepts ADMIN_TOKEN from the environment and prints no token', async () => {
    const port = await freePort()
    const adminToken = 'an-operator-chosen-admin-token'
    const run = startProcess({
      ADMIN_TOKEN: adminToken,
      PORT: String(port),
      DATABASE_URL: `file:${path.join(tempDir('env-admin'), 'app.db')}`,
    })
    await run.ready
    expect(run.output().stderr).not.toContain('Admin token')
    expect((await viewer(port, adminToken)).data?.viewer.user.name).toBe('admin')
    run.child.kill('SIGTERM')
    expect(await run.exited).toBe(0)
  })
})
