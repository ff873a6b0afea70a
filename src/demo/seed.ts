import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { graphqlWithRetry, mapLimit, type GraphQLCall } from './graphql.ts'
import { STORIES, type Story } from './stories.ts'

const run = promisify(execFile)

export interface DemoTask {
  id: string
  /** The task's mock session; null for the few tasks left without one (idle rows). */
  sessionId: string | null
  /** The task repository's working tree (a temporary git repository). */
  repoPath: string
  /** What the task is about: its agent's prompts and words come from here. */
  story: Story
}

export interface SeededWorkspace {
  /** The demo user's bearer token (the page reads it from `#token=`). */
  token: string
  userId: string
  workspaceId: string
  tasks: DemoTask[]
  /** Folder holding every task repository (removed by cleanup). */
  rootDir: string
  /**
   * Stops the demo sessions over the API (unless `stopSessions: false`, for a caller that closes
   * the server itself, which ends every agent) and removes the temporary repositories. Idempotent.
   */
  cleanup(options?: { stopSessions?: boolean }): Promise<void>
}

export interface SeedOptions {
  graphqlUrl: string
  adminToken: string
  /** How many tasks (27 by default). */
  tasks?: number
  userName?: string
  /** "Acme" by default: short, so the phone's header shows it whole. */
  workspaceName?: string
  /** Where the temporary repositories go (os.tmpdir() by default; it must lie in the server's REPOSITORY_ROOTS). */
  tempDir?: string
}

/** Every seventh task from the fourth on gets no session: a few rows that stay plainly idle, in Backlog. */
const withoutSession = (index: number) => index % 7 === 3

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 40)

async function git(dir: string, ...args: string[]): Promise<void> {
  await run('git', ['-C', dir, '-c', 'user.email=demo@example.com', '-c', 'user.name=Demo', '-c', 'commit.gpgsign=false', ...args], {
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0' },
  })
}

/**
 * A real repository: `main` (the base branch) with a first commit, and a checked-out task branch,
 * for most tasks one commit ahead with changes, so the Git monitor has totals from its first look.
 */
async function createRepository(dir: string, index: number, area: string, branch: string): Promise<void> {
  await mkdir(path.join(dir, 'src'), { recursive: true })
  await git(dir, 'init', '-q', '-b', 'main')
  await writeFile(path.join(dir, 'README.md'), `# ${area}\n\nDemo repository for task ${index + 1}.\n`)
  await writeFile(path.join(dir, 'src', `${area}.ts`), `export function ${area.replace(/-/g, '_')}() {\n  return ${index}\n}\n`)
  await git(dir, 'add', '-A')
  await git(dir, 'commit', '-qm', 'Initial commit')
  await git(dir, 'checkout', '-qb', branch)
  if (index % 3 !== 2) {
    const lines = Array.from({ length: 3 + (index % 5) * 4 }, (_, i) => `  // step ${i + 1} of the change for ${area}`)
    await writeFile(path.join(dir, 'src', `${area}.ts`), `export function ${area.replace(/-/g, '_')}() {\n${lines.join('\n')}\n  return ${index + 1}\n}\n`)
    if (index % 2 === 0) await writeFile(path.join(dir, 'CHANGELOG.md'), `- ${area}: work in progress\n`)
    await git(dir, 'add', '-A')
    await git(dir, 'commit', '-qm', `WIP: ${area}`)
  }
}

const CREATE_USER = /* GraphQL */ `
  mutation DemoCreateUser($name: String!) { createUser(name: $name) { token user { id name } } }
`
const CREATE_WORKSPACE = /* GraphQL */ `
  mutation DemoCreateWorkspace($name: String!) { createWorkspace(name: $name) { id name } }
`
const WORKFLOW = /* GraphQL */ `
  query DemoWorkflow($ws: ID!) { workflow(workspaceId: $ws) { steps { id name position terminal } } }
`
const CREATE_TASK = /* GraphQL */ `
  mutation DemoCreateTask($input: CreateTaskInput!) { createTask(input: $input) { id } }
`
const START_SESSION = /* GraphQL */ `
  mutation DemoStartSession($input: StartSessionInput!) { startSession(input: $input) { id state } }
`
const STOP_SESSION = /* GraphQL */ `
  mutation DemoStopSession($id: ID!) { stopSession(id: $id) { id state } }
`

/**
 * Seeds a demo workspace over the public GraphQL API: a user (its token), a workspace, `tasks`
 * tasks each with a temporary git repository, and a `mock` session on most of them. Holds no
 * globals; everything it made is undone by `cleanup()` (also when seeding fails half-way).
 */
export async function seedDemoWorkspace(options: SeedOptions): Promise<SeededWorkspace> {
  const count = options.tasks ?? 27
  const admin: GraphQLCall = { graphqlUrl: options.graphqlUrl, token: options.adminToken }
  // The real path: the server stores (and compares against REPOSITORY_ROOTS) the resolved one.
  const rootDir = await realpath(await mkdtemp(path.join(options.tempDir ?? os.tmpdir(), 'tss-demo-')))
  const sessionIds: string[] = []
  let cleaned: Promise<void> | undefined
  let user: GraphQLCall | undefined
  const cleanup = (cleanupOptions: { stopSessions?: boolean } = {}) =>
    (cleaned ??= (async () => {
      if (user && cleanupOptions.stopSessions !== false)
        await mapLimit(sessionIds, 8, (id) => graphqlWithRetry(user!, STOP_SESSION, { id }, 3))
      await rm(rootDir, { recursive: true, force: true, maxRetries: 3 })
    })())

  try {
    const created = await graphqlWithRetry<{ createUser: { token: string; user: { id: string } } }>(admin, CREATE_USER, {
      name: options.userName ?? 'demo',
    })
    user = { graphqlUrl: options.graphqlUrl, token: created.createUser.token }
    const workspaceId = (
      await graphqlWithRetry<{ createWorkspace: { id: string } }>(user, CREATE_WORKSPACE, { name: options.workspaceName ?? 'Acme' })
    ).createWorkspace.id
    const steps = (
      await graphqlWithRetry<{ workflow: { steps: { id: string; name: string; position: number; terminal: boolean }[] } }>(user, WORKFLOW, {
        ws: workspaceId,
      })
    ).workflow.steps
      .filter((s) => !s.terminal) // a terminal step (Done) would complete the task's sessions
      .sort((a, b) => a.position - b.position)
    const stepOf = (index: number) => {
      if (steps.length === 0) return undefined
      if (withoutSession(index)) return steps[0]!.id // Backlog
      const working = steps.slice(1).length > 0 ? steps.slice(1) : steps
      return working[index % 5 === 4 ? working.length - 1 : 0]!.id // mostly In progress, some in Review
    }

    const plans = Array.from({ length: count }, (_, index) => {
      const base = STORIES[index % STORIES.length]!
      const round = Math.floor(index / STORIES.length)
      const title = round === 0 ? base.title : `${base.title} (${round + 1})`
      const name = `${String(index + 1).padStart(2, '0')}-${slug(base.title)}`
      return { index, story: base, title, description: base.description, area: base.area, name, dir: path.join(rootDir, name), branch: `demo/${slug(base.title)}` }
    })

    // In phases: all repositories, then all tasks, then the sessions (measured faster than one
    // pipeline per task, where Git observations of started sessions compete with the rest).
    const repos = await mapLimit(plans, 8, (p) => createRepository(p.dir, p.index, p.area, p.branch))
    for (const result of repos) if (result.status === 'rejected') throw result.reason
    const createdTasks = await mapLimit(plans, 6, async (p) => {
      const { createTask } = await graphqlWithRetry<{ createTask: { id: string } }>(user!, CREATE_TASK, {
        input: {
          workspaceId,
          title: p.title,
          description: p.description,
          workflowStepId: stepOf(p.index),
          repositories: [{ name: `demo/${p.name}`, localPath: p.dir, baseBranch: 'main', branch: p.branch }],
        },
      })
      return createTask.id
    })
    const taskIds = createdTasks.map((r) => {
      if (r.status === 'rejected') throw r.reason
      return r.value
    })
    // Each start launches an agent process (CPU-bound): eight in flight was fastest on two cores.
    const started = await mapLimit(plans, 8, async (p) => {
      if (withoutSession(p.index)) return null
      const { startSession } = await graphqlWithRetry<{ startSession: { id: string } }>(user!, START_SESSION, {
        input: { taskId: taskIds[p.index], agentProfile: 'mock' },
      })
      sessionIds.push(startSession.id)
      return startSession.id
    })
    const tasks: DemoTask[] = plans.map((p, i) => {
      const result = started[i]!
      if (result.status === 'rejected') throw result.reason
      return { id: taskIds[i]!, sessionId: result.value, repoPath: p.dir, story: p.story }
    })
    return { token: user.token, userId: created.createUser.user.id, workspaceId, tasks, rootDir, cleanup }
  } catch (error) {
    await cleanup().catch(() => undefined)
    throw error
  }
}
