import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDemoActivity } from '../../src/demo/activity.ts'
import { graphql } from '../../src/demo/graphql.ts'
import { seedDemoWorkspace } from '../../src/demo/seed.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { eventually } from '../support/wait.ts'

interface Row {
  id: string
  title: string
  repositories: { localPath: string | null; baseBranch: string | null }[]
  statusSummary: {
    foregroundActivity: string | null
    pendingAction: 'PERMISSION' | 'CLARIFICATION' | null
    activeError: { category: string | null } | null
    git: { changedFiles: number } | null
    primarySession: { id: string; state: string } | null
  } | null
}

const TASKS = /* GraphQL */ `
  query DemoTestTasks($ws: ID!) {
    tasks(workspaceId: $ws, first: 100) {
      edges {
        node {
          id
          title
          repositories { localPath baseBranch }
          statusSummary { foregroundActivity pendingAction activeError { category } git { changedFiles } primarySession { id state } }
        }
      }
    }
  }
`

/** A small seeded PRNG (mulberry32): the activity's choices are the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Mock agents this process (the in-process test server) has as children. */
function agentProcesses(): number {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'mock-agent'], { encoding: 'utf8' }).trim().split('\n').length
  } catch {
    return 0 // pgrep exits 1 when nothing matches
  }
}

describe('demo seed and activity', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('sqlite')
  })
  afterAll(async () => {
    await server?.close()
  })

  it('seeds 27 tasks whose rows show every state while the activity runs, and leaves nothing behind', { timeout: 180_000 }, async () => {
    const started = performance.now()
    const seed = await seedDemoWorkspace({ graphqlUrl: server.graphqlUrl, adminToken: server.adminToken, tasks: 27 })
    const seedMs = performance.now() - started
    const logs: string[] = []
    const activity = startDemoActivity({ graphqlUrl: server.graphqlUrl, token: seed.token, tasks: seed.tasks, random: seeded(13), intervalMs: 300, log: (m) => logs.push(m) })
    try {
      expect(seed.tasks).toHaveLength(27)
      const withSession = seed.tasks.filter((t) => t.sessionId)
      expect(withSession.length).toBeGreaterThanOrEqual(20)
      expect(withSession.length).toBeLessThan(27)
      expect(new Set(seed.tasks.map((t) => t.repoPath)).size).toBe(27)
      for (const task of seed.tasks) expect(existsSync(`${task.repoPath}/.git`)).toBe(true)

      const call = { graphqlUrl: server.graphqlUrl, token: seed.token }
      const read = async () => (await graphql<{ tasks: { edges: { node: Row }[] } }>(call, TASKS, { ws: seed.workspaceId })).tasks.edges.map((e) => e.node)
      const rows = await read()
      expect(rows).toHaveLength(27)
      expect(new Set(rows.map((r) => r.title)).size).toBe(27)
      for (const row of rows) expect(row.repositories).toEqual([{ localPath: seed.tasks.find((t) => t.id === row.id)!.repoPath, baseBranch: 'main' }])

      // Polled over the API until one look shows them all at once.
      const mix = await eventually(async () => {
        const summaries = (await read()).map((r) => r.statusSummary)
        const seen = {
          permission: summaries.filter((s) => s?.pendingAction === 'PERMISSION').length,
          clarification: summaries.filter((s) => s?.pendingAction === 'CLARIFICATION').length,
          error: summaries.filter((s) => s?.activeError).length,
          generating: summaries.filter((s) => s?.foregroundActivity === 'GENERATING').length,
          git: summaries.filter((s) => (s?.git?.changedFiles ?? 0) > 0).length,
          idle: summaries.filter((s) => !s?.foregroundActivity && !s?.pendingAction).length,
        }
        return Object.values(seen).every((n) => n > 0) && seen
      }, 60_000)
      expect(mix.permission).toBeGreaterThanOrEqual(1)
      expect(mix.error).toBeGreaterThanOrEqual(1)
      expect(mix.git).toBeGreaterThanOrEqual(1)

      // The activity goes on by itself: it answers requests and sends new scripts.
      await eventually(() => activity.stats.scriptsSent > withSession.length && activity.stats.permissionsAnswered + activity.stats.clarificationsAnswered > 0, 60_000)
    } finally {
      await activity.stop()
      await seed.cleanup()
    }
    const sent = activity.stats.scriptsSent
    await eventually(() => agentProcesses() === 0, 10_000)
    expect(existsSync(seed.rootDir)).toBe(false)
    for (const task of seed.tasks) expect(existsSync(task.repoPath)).toBe(false)
    expect(activity.stats.scriptsSent).toBe(sent)
    expect(activity.stats.failures, logs.join('\n')).toBe(0)
    console.info(`demo seed: 27 tasks in ${Math.round(seedMs)} ms; activity ${JSON.stringify(activity.stats)}`)
  })
})
