import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { blockOtherHosts, launchBrowser } from '../support/browser.ts'
import { ok } from '../support/client.ts'
import { sessionSettled, userWithWorkspace } from '../support/fixtures.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { CreateTaskDocument, StartSessionDocument } from '../generated/graphql.ts'
import { cleanEnv, installConsumerProject, packSdk, runBin, type PackedSdk } from './consumer-project.ts'

const sdkSources = new URL('../../packages/client/src/', import.meta.url).pathname
/** Strings only the server's code holds: none may reach the package or a consumer's bundle. */
const SERVER_MARKERS = ['@prisma', 'graphql-yoga', '@pothos', 'better-sqlite3', 'src/server/']

/** Every module of packages/client/src, without its extension (index, react/index, generated/graphql, …). */
function sdkModules(dir = sdkSources, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return sdkModules(path.join(dir, entry.name), `${prefix}${entry.name}/`)
    return entry.name.endsWith('.ts') ? [`${prefix}${entry.name.slice(0, -'.ts'.length)}`] : []
  })
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
}

/** `file(line,col): error TSxxxx` lines of tsc's output, as [file, line, code]. */
function tscErrors(output: string): [string, number, string][] {
  return [...output.matchAll(/^(.+?)\((\d+),\d+\): error (TS\d+)/gm)].map((m) => [m[1]!, Number(m[2]), m[3]!])
}

describe('@task-status/client packed, installed and used by an outside project', () => {
  let work: string
  let packed: PackedSdk
  let app: string
  let server: TestServer

  beforeAll(async () => {
    work = mkdtempSync(path.join(inject('tempRoot'), 'package-'))
    // One tarball, one project and one offline install serve every consumer below. Both settle
    // before a failure is reported, so afterAll closes a server that started.
    const [started, installed] = await Promise.allSettled([
      startTestServer('sqlite', { webRoot: path.join(work, 'app', 'dist') }).then((s) => (server = s)),
      packSdk(work).then(async (result) => {
        packed = result
        app = await installConsumerProject(work, result)
      }),
    ])
    for (const outcome of [started, installed]) if (outcome.status === 'rejected') throw outcome.reason
  }, 180_000)
  afterAll(async () => {
    await server?.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('packs the built ESM with its declarations and source maps, package.json and README.md: no sources, tests or server code', () => {
    const expected = ['package.json', 'README.md', ...sdkModules().flatMap((m) => [`dist/${m}.js`, `dist/${m}.js.map`, `dist/${m}.d.ts`, `dist/${m}.d.ts.map`])]
    // A file in dist/ from a module that no longer exists would be shipped too: rebuild after deleting dist/.
    expect([...packed.files].sort()).toEqual(expected.sort())

    const installed = path.join(app, 'node_modules/@task-status/client')
    for (const file of filesUnder(path.join(installed, 'dist'))) {
      const text = readFileSync(file, 'utf8')
      for (const marker of SERVER_MARKERS) expect(text.includes(marker), `${marker} in ${file}`).toBe(false)
      if (!file.endsWith('.js.map')) continue
      // The sources are not shipped: each map carries its own (inlineSources), or it would point at nothing.
      const map = JSON.parse(text) as { sources: string[]; sourcesContent?: (string | null)[] }
      expect(map.sourcesContent?.filter((s) => typeof s === 'string')).toHaveLength(map.sources.length)
    }
  })

  it('typechecks a strict consumer of both entry points under NodeNext and under bundler resolution', async () => {
    // NodeNext: also every declaration file it reads (skipLibCheck: false), with neither the DOM lib
    // nor @types/node. Bundler: the React page too (src/main.tsx).
    const [nodeNext, bundler] = await Promise.all([runBin(app, 'tsc', ['-p', 'tsconfig.nodenext.json']), runBin(app, 'tsc', ['-p', 'tsconfig.bundler.json'])])
    expect(nodeNext).toEqual({ code: 0, output: '' })
    expect(bundler).toEqual({ code: 0, output: '' })
  })

  it('rejects a wrong use: the installed types are checked, not any', async () => {
    writeFileSync(
      path.join(app, 'wrong-use.ts'),
      [
        "import { compareTasks, createTaskClient, type SendResult } from '@task-status/client'",
        "import { useTaskSummaries } from '@task-status/client/react'",
        "const client = createTaskClient({ url: 'ws://localhost/graphql' })",
        'const title: number = Object.values(client.summaries.getState().tasks)[0]!.title',
        "compareTasks('OLDEST_FIRST')",
        "export const rows = useTaskSummaries(client, 'BY_NAME')",
        "export const sent = (result: SendResult) => (result.outcome === 'unknown' ? result.message : title)",
        '',
      ].join('\n'),
    )
    writeFileSync(path.join(app, 'tsconfig.wrong.json'), JSON.stringify({ extends: './tsconfig.nodenext.json', files: ['wrong-use.ts'] }))
    const { code, output } = await runBin(app, 'tsc', ['-p', 'tsconfig.wrong.json'])
    expect(code).not.toBe(0)
    expect(tscErrors(output)).toEqual([
      ['wrong-use.ts', 3, 'TS2345'], // no token
      ['wrong-use.ts', 4, 'TS2322'], // a title is a string
      ['wrong-use.ts', 5, 'TS2345'], // not a TaskOrder
      ['wrong-use.ts', 6, 'TS2345'], // not a TaskOrder
      ['wrong-use.ts', 7, 'TS2339'], // an unknown outcome carries no message
    ])
  })

  it('runs a Node program (ws) that lists the rows with their summary revisions and sees them move after a start and a message', async () => {
    const { token, workspaceId } = await userWithWorkspace(server, 'node-consumer')
    const ids: Record<string, string> = {}
    for (const title of ['Alpha', 'Beta']) ids[title] = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title } })).createTask.id

    const { stdout } = await promisify(execFile)(process.execPath, ['node-consumer.mjs', server.graphqlUrl, token, workspaceId, ids.Beta!], { cwd: app, env: cleanEnv(), timeout: 60_000 })
    const steps = Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { step: string; rows?: { title: string; revision: number }[]; outcome?: string })
        .map((s) => [s.step, s]),
    )
    const revisionOf = (step: string, title: string) => steps[step]!.rows!.find((row) => row.title === title)!.revision

    expect(Object.keys(steps)).toEqual(['booted', 'answered', 'sent', 'moved'])
    expect(steps.booted!.rows!.map((row) => row.title).sort()).toEqual(['Alpha', 'Beta'])
    expect(steps.booted!.rows!.every((row) => Number.isInteger(row.revision))).toBe(true)
    expect(revisionOf('answered', 'Beta')).toBeGreaterThan(revisionOf('booted', 'Beta'))
    // Beta's activity moved it to the top of the LAST_ACTIVITY order.
    expect(steps.answered!.rows![0]!.title).toBe('Beta')
    expect(steps.sent!.outcome).toBe('accepted')
    expect(revisionOf('moved', 'Beta')).toBeGreaterThan(revisionOf('answered', 'Beta'))
    expect(revisionOf('moved', 'Alpha')).toBe(revisionOf('booted', 'Alpha'))
  })

  it('builds a Vite + React page holding the SDK and no server code; served, it lists the rows, shows a session and sends a message in Chromium', async () => {
    const build = await runBin(app, 'vite', ['build'])
    expect(build.code, build.output).toBe(0)
    const scripts = filesUnder(path.join(app, 'dist')).filter((file) => file.endsWith('.js'))
    const bundle = scripts.map((file) => readFileSync(file, 'utf8')).join('\n')
    // The SDK's operations and graphql-ws's protocol are in; nothing of the server is.
    expect(bundle).toContain('ClientWorkspaceEvents')
    expect(bundle).toContain('graphql-transport-ws')
    for (const marker of SERVER_MARKERS) expect(bundle.includes(marker), marker).toBe(false)

    const { token, workspaceId } = await userWithWorkspace(server, 'page-consumer')
    const taskId = (await ok(server.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 'Gamma' } })).createTask.id
    const sessionId = (await ok(server.graphqlUrl, token, StartSessionDocument, { input: { taskId, prompt: 'hello' } })).startSession.id
    await sessionSettled(server, sessionId)

    const browser = await launchBrowser()
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
      const { attempted } = await blockOtherHosts(context)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      await page.goto(`${server.url}/?token=${token}&workspace=${workspaceId}`)

      const transcript = page.getByRole('list', { name: 'Transcript' })
      await page.getByRole('button', { name: 'Gamma' }).click({ timeout: 20_000 })
      await transcript.locator('li[data-author="USER"]', { hasText: 'hello' }).waitFor({ timeout: 20_000 })
      await page.getByLabel('Message').fill('count')
      await page.getByRole('button', { name: 'Send' }).click()
      await page.locator('output', { hasText: 'accepted' }).waitFor({ timeout: 20_000 })
      await transcript.locator('li[data-author="USER"]', { hasText: 'count' }).waitFor({ timeout: 20_000 })
      expect(errors).toEqual([])
      expect(attempted).toEqual([])
    } finally {
      await browser.close()
    }
  })
})
