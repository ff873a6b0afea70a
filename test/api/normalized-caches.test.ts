import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { format } from 'node:util'
import { buildSchema, introspectionFromSchema, isObjectType, isUnionType } from 'graphql'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { ApolloClient, InMemoryCache } from '@apollo/client'
import { loadDevMessages, loadErrorMessages } from '@apollo/client/dev'
import { GraphQLWsLink } from '@apollo/client/link/subscriptions'
import { __DEV__ } from '@apollo/client/utilities/environment'
import { Client as UrqlClient, subscriptionExchange, type OperationResult } from '@urql/core'
import { cacheExchange } from '@urql/exchange-graphcache'
import { createClient, type Client as WsClient } from 'graphql-ws'
import WebSocket from 'ws'
import { sign } from '../../src/github/signature.ts'
import { gitRepo } from '../support/git-repo.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { eventually } from '../support/wait.ts'
import {
  CachedBootDocument,
  CachedRefreshSessionGitDocument,
  CachedSessionGitDocument,
  CachedSetPullRequestAutomationDocument,
  CachedTaskPullRequestsDocument,
  CachedWorkspaceEventsDocument,
  CreateTaskDocument,
  LinkGitHubRepositoryDocument,
  RefreshSessionGitDocument,
  StartSessionDocument,
  TaskStatusSummariesDocument,
  UpdateTaskDocument,
  type CachedBootQuery,
} from '../generated/graphql.ts'

const REVISIONS = 10
const WEBHOOK_SECRET = 'webhook-secret-for-tests'
const schema = buildSchema(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8'))
const types = Object.values(schema.getTypeMap()).filter((t) => !t.name.startsWith('__'))
/** What the README tells Apollo users to pass: the union members of the printed schema. */
const possibleTypes = Object.fromEntries(types.filter(isUnionType).map((u) => [u.name, u.getTypes().map((t) => t.name)]))
const WORKSPACE_EVENTS = possibleTypes.WorkspaceEvent!

/** The graphql-ws client a browser app would create: token in the connection_init payload. */
function socket(server: TestServer, token: string): WsClient {
  return createClient({
    url: server.wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { authorization: `Bearer ${token}` },
  })
}

function apollo(ws: WsClient, options: ConstructorParameters<typeof InMemoryCache>[0] = {}) {
  return new ApolloClient({ link: new GraphQLWsLink(ws), cache: new InMemoryCache(options) })
}

function cachedTask(data: CachedBootQuery | undefined | null, taskId: string) {
  return data?.boot.tasks.edges.find((e) => e.node.id === taskId)?.node
}

describe('normalized client caches (Apollo InMemoryCache, urql Graphcache) on a listening server (sqlite)', () => {
  let server: TestServer
  let token: string
  let workspaceId: string
  let taskId: string
  let sockets: WsClient[]
  let warnings: string[]

  const gql = <R, V>(doc: Parameters<typeof ok<R, V>>[2], vars: V) => ok<R, V>(server.graphqlUrl, token, doc, ...([vars] as never))
  const serverRevision = async () => (await gql(TaskStatusSummariesDocument, { taskIds: [taskId] })).taskStatusSummaries[0]!.revision

  /**
   * Summary revisions caused over HTTP, so the client cache learns of them only through the feed.
   * Each waits for its revision on the subscription: a burst would be collapsed by the projector.
   */
  async function causeRevisions(lastFed: () => number) {
    const first = await serverRevision()
    for (let i = 1; i <= REVISIONS; i++) {
      await gql(UpdateTaskDocument, { id: taskId, input: { title: `title ${i}` } })
      await server.projector.idle()
      const expected = await serverRevision()
      await eventually(() => lastFed() >= expected)
    }
    const latest = await serverRevision()
    expect(latest).toBeGreaterThanOrEqual(first + REVISIONS)
    return latest
  }

  /** graphql-ws does not acknowledge a subscribe: the first delivered revision proves the feed is live. */
  async function untilFeedLive(fed: number[]) {
    let attempt = 0
    await eventually(async () => {
      if (fed.length > 0) return true
      await gql(UpdateTaskDocument, { id: taskId, input: { title: `warm-up ${++attempt}` } })
      await server.projector.idle()
      return false
    })
  }

  /** Boot query watched, feed followed, revisions caused; returns the latest revision and the watched results. */
  async function followWithApollo(client: ApolloClient) {
    const watched: (CachedBootQuery | undefined)[] = []
    const watch = client
      .watchQuery({ query: CachedBootDocument, variables: { workspaceId } })
      .subscribe((result) => watched.push(result.data as CachedBootQuery | undefined))
    const fed: number[] = []
    const feed = client.subscribe({ query: CachedWorkspaceEventsDocument, variables: { workspaceId } }).subscribe((result) => {
      const event = result.data?.workspaceEvents
      if (event?.__typename === 'TaskStatusSummaryUpdated') fed.push(event.summary.revision)
    })
    try {
      await eventually(() => cachedTask(watched.at(-1), taskId))
      const initial = cachedTask(watched.at(-1), taskId)!.statusSummary!.revision
      await untilFeedLive(fed)
      const latest = await causeRevisions(() => fed.at(-1) ?? 0)
      expect(latest).toBeGreaterThan(initial)
      await eventually(() => cachedTask(watched.at(-1), taskId)?.statusSummary?.revision === latest)
      return { latest, watched }
    } finally {
      feed.unsubscribe()
      watch.unsubscribe()
    }
  }

  /** The same switcher on urql: every operation over graphql-ws, Graphcache in front. */
  async function followWithUrql(cacheOptions: Parameters<typeof cacheExchange>[0]) {
    const ws = socket(server, token)
    sockets.push(ws)
    const client = new UrqlClient({
      url: server.graphqlUrl,
      exchanges: [
        cacheExchange(cacheOptions),
        subscriptionExchange({
          enableAllOperations: true,
          forwardSubscription: (request) => ({
            subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
          }),
        }),
      ],
    })
    const watched: OperationResult<CachedBootQuery>[] = []
    const watch = client.query(CachedBootDocument, { workspaceId }).subscribe((result) => watched.push(result))
    const fed: number[] = []
    const feed = client.subscription(CachedWorkspaceEventsDocument, { workspaceId }).subscribe((result) => {
      const event = result.data?.workspaceEvents
      if (event?.__typename === 'TaskStatusSummaryUpdated') fed.push(event.summary.revision)
    })
    try {
      await eventually(() => cachedTask(watched.at(-1)?.data, taskId))
      const initial = cachedTask(watched.at(-1)?.data, taskId)!.statusSummary!.revision
      await untilFeedLive(fed)
      const latest = await causeRevisions(() => fed.at(-1) ?? 0)
      expect(latest).toBeGreaterThan(initial)
      // Graphcache re-reads the watched query from the entities the feed wrote.
      await eventually(() => cachedTask(watched.at(-1)?.data, taskId)?.statusSummary?.revision === latest)
      expect(watched.filter((r) => r.error)).toEqual([])
      return { latest, watched }
    } finally {
      feed.unsubscribe()
      watch.unsubscribe()
    }
  }

  beforeAll(async () => {
    loadDevMessages()
    loadErrorMessages()
    // Every store write moves the clock, so each task edit is a newer activity milestone and
    // therefore a new summary revision, whatever the wall clock's resolution.
    let tick = Date.parse('2026-01-01T00:00:00.000Z')
    server = await startTestServer('sqlite', {
      clock: () => new Date((tick += 1000)),
      env: { GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET },
    })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'cache'))
  })
  afterAll(() => server?.close())

  beforeEach(async () => {
    taskId = (await gql(CreateTaskDocument, { input: { workspaceId, title: 'title 0' } })).createTask.id
    await server.projector.idle()
    sockets = []
    warnings = []
    // Both libraries report cache trouble (Apollo: "Cache data may be lost", urql: keying) here.
    for (const level of ['warn', 'error'] as const)
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void warnings.push(format(...args)))
  })
  afterEach(async () => {
    vi.restoreAllMocks()
    await Promise.all(sockets.map((s) => s.dispose()))
  })

  it('Apollo Client InMemoryCache, default settings: the cached task shows the latest summary revision', async () => {
    expect(__DEV__).toBe(true) // Apollo checks for data loss on merge only in development builds
    const ws = socket(server, token)
    sockets.push(ws)
    const client = apollo(ws)
    try {
      const { latest } = await followWithApollo(client)
      const read = client.cache.readQuery({ query: CachedBootDocument, variables: { workspaceId } })
      expect(cachedTask(read, taskId)).toMatchObject({ title: `title ${REVISIONS}`, statusSummary: { id: taskId, revision: latest } })
      expect(client.cache.identify({ __typename: 'TaskStatusSummary', id: taskId })).toBe(`TaskStatusSummary:${taskId}`)
      // Without possibleTypes Apollo 4 cannot tell a union member's non-matching fragments from
      // missing data, and the subscription root keeps only its latest event (a keyless wrapper).
      // Those two notices are all it may log: nothing about a summary or task being replaced.
      const unexplained = warnings.filter(
        (w) =>
          !new RegExp(`^Cannot match inline fragment on \`(${WORKSPACE_EVENTS.join('|')})\` against \`(${WORKSPACE_EVENTS.join('|')})\``).test(w) &&
          !w.startsWith('Cache data may be lost when replacing the workspaceEvents field of a Subscription object'),
      )
      expect(unexplained).toEqual([])
    } finally {
      client.stop()
    }
  })

  it("Apollo Client with the README's possibleTypes and Subscription policy logs no warning at all", async () => {
    const ws = socket(server, token)
    sockets.push(ws)
    const client = apollo(ws, {
      possibleTypes,
      typePolicies: {
        Subscription: { fields: { workspaceEvents: { merge: false }, sessionEvents: { merge: false } } },
      },
    })
    try {
      const { latest } = await followWithApollo(client)
      const read = client.cache.readQuery({ query: CachedBootDocument, variables: { workspaceId } })
      expect(cachedTask(read, taskId)?.statusSummary?.revision).toBe(latest)
      expect(warnings).toEqual([])
    } finally {
      client.stop()
    }
  })

  // Graphcache logs each distinct notice once per process, so the run that proves which notices
  // appear goes first; the default-settings run then adds only what possibleTypes would have avoided.
  it("urql Graphcache with the README's schema: latest revision; only keyless value types are embedded", async () => {
    const { latest, watched } = await followWithUrql({ schema: introspectionFromSchema(schema) })
    expect(cachedTask(watched.at(-1)?.data, taskId)?.statusSummary?.revision).toBe(latest)
    // Graphcache names (in development) each type it embeds in its parent for want of an id.
    // Those must be wrappers and value objects only: never a type the schema gives an id.
    const keyless = new Set(warnings.flatMap((w) => [...w.matchAll(/custom `keys` config for `(\w+)`/g)].map((m) => m[1]!)))
    const withId = new Set(types.filter((t) => isObjectType(t) && 'id' in t.getFields()).map((t) => t.name))
    expect(withId.has('TaskStatusSummary')).toBe(true)
    expect(keyless.size).toBeGreaterThan(0) // the notice is on: a wrapper such as BootState has no id
    expect([...keyless].filter((name) => withId.has(name))).toEqual([])
    expect(warnings.filter((w) => !w.startsWith('Invalid key:'))).toEqual([])
  })

  it('urql Graphcache, default settings: the watched boot query shows the latest summary revision', async () => {
    const { latest, watched } = await followWithUrql({})
    expect(cachedTask(watched.at(-1)?.data, taskId)).toMatchObject({
      title: `title ${REVISIONS}`,
      statusSummary: { id: taskId, revision: latest },
    })
    // Without a schema Graphcache matches the feed's union fragments by heuristics and writes every
    // fragment of a union member, reporting the fields the other members' fragments miss.
    const members = WORKSPACE_EVENTS.join('|')
    const unexplained = warnings.filter(
      (w) =>
        !new RegExp(`^Heuristic Fragment Matching: .* against the \`(${members})\` type, but the type condition is \`(${members})\``).test(w) &&
        !new RegExp(`^Invalid undefined: .*\\n\\(Caused At: .*Inline Fragment on "(${members})"\\)`, 's').test(w) &&
        !w.startsWith('Invalid key:'),
    )
    expect(unexplained).toEqual([])
  })

  it('Apollo: a setPullRequestAutomation result updates the pull request the cached task holds', async () => {
    const repository = `acme/web-${randomUUID().slice(0, 8)}`
    await ok(server.graphqlUrl, server.adminToken, LinkGitHubRepositoryDocument, { workspaceId, repository })
    const prTask = (
      await gql(CreateTaskDocument, { input: { workspaceId, title: 'pr', repositories: [{ name: repository, branch: 'fix-login' }] } })
    ).createTask.id
    const deliver = async (title: string) => {
      const raw = JSON.stringify({
        action: 'edited',
        repository: { full_name: repository },
        pull_request: {
          number: 7, html_url: `https://github.com/${repository}/pull/7`, title, state: 'open', merged: false,
          draft: false, mergeable_state: 'clean', head: { ref: 'fix-login' },
        },
      })
      const response = await fetch(`${server.url}/webhooks/github`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': randomUUID(),
          'x-hub-signature-256': sign(WEBHOOK_SECRET, raw),
        },
        body: raw,
      })
      expect(response.status).toBeLessThan(300)
    }
    await deliver('Fix login')
    const idOverHttp = async () => (await gql(CachedTaskPullRequestsDocument, { id: prTask })).task!.pullRequests[0]!.id
    const first = await idOverHttp()
    await deliver('Fix login, take 2')
    expect(await idOverHttp()).toBe(first) // the same observation keeps its id when it changes

    const ws = socket(server, token)
    sockets.push(ws)
    const client = apollo(ws)
    try {
      const { data } = await client.query({ query: CachedTaskPullRequestsDocument, variables: { id: prTask } })
      expect(data?.task?.pullRequests).toMatchObject([{ id: first, title: 'Fix login, take 2', autoFix: false }])
      await client.mutate({
        mutation: CachedSetPullRequestAutomationDocument,
        variables: { input: { taskId: prTask, repository, number: 7, autoFix: true } },
      })
      // No refetch: the mutation result (id + autoFix) was merged into the entity the task refers to.
      const read = client.cache.readQuery({ query: CachedTaskPullRequestsDocument, variables: { id: prTask } })
      expect(read?.task?.pullRequests).toMatchObject([{ id: first, title: 'Fix login, take 2', autoFix: true }])
      expect(warnings).toEqual([])
    } finally {
      client.stop()
    }
  })

  it('Apollo: a refreshSessionGit result updates the Git status the cached session holds', async () => {
    const repo = gitRepo()
    const gitTask = (
      await gql(CreateTaskDocument, {
        input: { workspaceId, title: 'git', repositories: [{ name: 'acme/app', localPath: repo.dir, baseBranch: 'main' }] },
      })
    ).createTask.id
    const sessionId = (await gql(StartSessionDocument, { input: { taskId: gitTask } })).startSession.id
    await gql(RefreshSessionGitDocument, { sessionId })

    const ws = socket(server, token)
    sockets.push(ws)
    const client = apollo(ws)
    try {
      const { data } = await client.query({ query: CachedSessionGitDocument, variables: { id: sessionId } })
      const [before] = data!.session!.git
      expect(before).toMatchObject({ changedFiles: 0 })
      repo.write('new-file.txt', 'one\ntwo\nthree\n')
      const { data: refreshed } = await client.mutate({ mutation: CachedRefreshSessionGitDocument, variables: { sessionId } })
      expect(refreshed?.refreshSessionGit).toMatchObject([{ id: before!.id, changedFiles: 1, additions: 3 }])
      const read = client.cache.readQuery({ query: CachedSessionGitDocument, variables: { id: sessionId } })
      expect(read?.session?.git).toMatchObject([{ id: before!.id, changedFiles: 1, additions: 3 }])
      expect(warnings).toEqual([])
    } finally {
      client.stop()
      await server.sessions.stopSession(sessionId).catch(() => undefined)
    }
  })
})
