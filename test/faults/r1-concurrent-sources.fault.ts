// R1 (docs/performance.md): 1,000 concurrent source events over 50 tasks, all in flight at once,
// through two real server instances on one PostgreSQL and one Redis. The summary of every task
// is serialized per task by compare-and-update; this proves it under real contention across
// processes: the feed never carries one revision with two contents nor a revision going back,
// the stored rows equal a full rebuild from the authoritative rows, and no request failed inside
// the server (a saturated database is UNAVAILABLE, which a client retries).
import { randomUUID } from 'node:crypto'
import { beforeAll, describe, expect, it } from 'vitest'
import { instanceCluster } from '../support/instance-cluster.ts'
import { gqlOk, INSTANCE_ADMIN_TOKEN, type Instance } from '../support/instances.ts'
import { http, ok, wsClient, wsExecute, wsSubscribe, type Result } from '../support/client.ts'
import { eventually } from '../support/wait.ts'
import { summaryDrift, openStore } from '../support/summary-rebuild.ts'
import { sign } from '../../src/github/signature.ts'
import {
  SetPullRequestAutomationDocument,
  TaskStatusSummariesDocument,
  UpdateTaskDocument,
  ViewerDocument,
  WorkspaceEventsDocument,
  type SummaryFieldsFragment,
} from '../generated/graphql.ts'

const TASKS = 50
const EVENTS = 1000
const SECRET = 'r1-webhook-secret'
const REPOSITORY = 'acme/r1'
/** A real client's patience for UNAVAILABLE: bounded attempts with a growing pause. */
const MAX_ATTEMPTS = 20

describe('R1: 1,000 concurrent source events over 50 tasks through two instances on PostgreSQL', () => {
  // The load comes from one caller: the per-caller mutation limit is not what this measures.
  const cluster = instanceCluster(['A', 'B'], { GITHUB_WEBHOOK_SECRET: SECRET, RATE_LIMIT_MUTATIONS: '0', LOG_LEVEL: 'warn' })
  let a: Instance
  let b: Instance
  let workspaceId: string
  let taskIds: string[]

  beforeAll(async () => {
    ;[a, b] = cluster.instances
    workspaceId = (await gqlOk<{ createWorkspace: { id: string } }>(a, 'mutation { createWorkspace(name: "r1") { id } }')).createWorkspace.id
    await gqlOk(a, 'mutation ($w: ID!, $r: String!) { linkGitHubRepository(workspaceId: $w, repository: $r) { id } }', { w: workspaceId, r: REPOSITORY })
    taskIds = await Promise.all(
      Array.from({ length: TASKS }, async (_, i) => {
        const instance = [a, b][i % 2]!
        const { createTask } = await gqlOk<{ createTask: { id: string } }>(
          instance,
          'mutation ($w: ID!, $t: String!, $b: String!) { createTask(input: { workspaceId: $w, title: $t, repositories: [{ name: "acme/r1", branch: $b }] }) { id } }',
          { w: workspaceId, t: `task ${i}`, b: branchOf(i) },
        )
        // Its pull request now, so the automation changes below have one to act on.
        expect((await deliver(instance, pullRequestEvent(i, 0))).status).toBe(200)
        return createTask.id
      }),
    )
  })
  it('no revision is delivered twice with different content, revisions only go up, stored summaries equal a full rebuild, and nothing failed inside the server', async () => {
    // One workspace feed subscriber on each instance; both instances' Redis subscriptions in place before the load.
    const followers = await Promise.all(
      [a, b].map(async (instance) => {
        const client = await wsClient(instance.url.replace('http', 'ws'), INSTANCE_ADMIN_TOKEN)
        const feed = wsSubscribe(client, WorkspaceEventsDocument, { workspaceId })
        await wsExecute(client, ViewerDocument)
        return { instance, client, feed }
      }),
    )
    await eventually(async () => (await cluster.redis.subscribers(`tss:workspace:${workspaceId}`)) >= 2)

    const startedAt = Date.now()
    const outcomes = await Promise.all(Array.from({ length: EVENTS }, (_, i) => sourceEvent(i)))
    const codes = outcomes.flatMap((o) => o.codes)
    const retried = outcomes.filter((o) => o.attempts > 1).length
    console.info(
      `R1: ${EVENTS} source events answered in ${Date.now() - startedAt} ms, ${retried} retried after UNAVAILABLE, error codes: ${JSON.stringify(countBy(codes))}`,
    )
    expect(codes.filter((c) => c !== 'UNAVAILABLE')).toEqual([])
    expect(outcomes.filter((o) => !o.done)).toEqual([])

    // Quiescence: both instances' projectors have caught up when every stored row equals a rebuild.
    const store = await openStore(cluster.databaseUrl)
    try {
      await eventually(async () => (await summaryDrift(store, taskIds)).length === 0, 30_000).catch(() => undefined)
      expect(await summaryDrift(store, taskIds)).toEqual([])
      const stored = await ok(a.url, INSTANCE_ADMIN_TOKEN, TaskStatusSummariesDocument, { taskIds })
      const storedByTask = new Map(stored.taskStatusSummaries.map((s) => [s!.taskId, s!]))

      // Each subscriber ends on the stored revision of every task.
      const behind = () =>
        followers.flatMap(({ instance, feed }) =>
          taskIds.flatMap((id) => {
            const delivered = lastDelivered(feed.events, id)?.revision
            const stored = storedByTask.get(id)!.revision
            return delivered === stored ? [] : [{ on: instance.name, taskId: id, delivered, stored }]
          }),
        )
      await eventually(() => behind().length === 0).catch(() => undefined)
      // Neither follower was disconnected (a 1013 would end its subscription here: it does not retry).
      expect(followers.map(({ feed }) => (feed.failure as { code?: number } | undefined)?.code)).toEqual([undefined, undefined])
      expect(behind()).toEqual([])
      const contentOf = new Map<string, string>()
      for (const { feed } of followers) {
        const events = feed.events
        expect(events.filter((e) => e.data?.workspaceEvents.__typename === 'WorkspaceResync')).toEqual([])
        const lastRevision = new Map<string, number>()
        for (const summary of summariesOf(events)) {
          // One content per (task, revision) across both instances' subscribers.
          const key = `${summary.taskId}#${summary.revision}`
          const content = JSON.stringify(summary)
          expect(contentOf.get(key) ?? content, key).toBe(content)
          contentOf.set(key, content)
          expect(summary.revision, summary.taskId).toBeGreaterThan(lastRevision.get(summary.taskId) ?? 0)
          lastRevision.set(summary.taskId, summary.revision)
        }
        for (const id of taskIds) expect(lastDelivered(events, id)).toEqual(storedByTask.get(id))
      }
    } finally {
      await store.db.$disconnect()
      for (const { feed, client } of followers) {
        feed.dispose()
        await client.dispose()
      }
    }
  })

  /**
   * Event i: task i % 50 through instance ⌊i / 50⌋ % 2 (each task's events alternate between the
   * instances, so their projectors race on it), one of three kinds of source: a task update
   * (activity time), a pull-request webhook delivery (pull-request aggregate) and a change of the
   * pull request's automation (autoFix / autoMerge). Answered UNAVAILABLE, it is sent again.
   */
  async function sourceEvent(i: number): Promise<{ done: boolean; attempts: number; codes: string[] }> {
    const task = i % TASKS
    const instance = [a, b][Math.floor(i / TASKS) % 2]!
    const codes: string[] = []
    const delivery = randomUUID() // GitHub resends a delivery under its id
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      let result: Result<unknown>
      if (i % 3 === 0) result = await http(instance.url, INSTANCE_ADMIN_TOKEN, UpdateTaskDocument, { id: taskIds[task]!, input: { title: `task ${task} · ${i}` } })
      else if (i % 3 === 1) {
        const { status } = await deliver(instance, pullRequestEvent(task, i), delivery)
        result = status === 200 ? { data: {} } : { errors: [{ message: String(status), extensions: { code: status === 503 ? 'UNAVAILABLE' : `HTTP ${status}` } }] }
      } else
        result = await http(instance.url, INSTANCE_ADMIN_TOKEN, SetPullRequestAutomationDocument, {
          input: { taskId: taskIds[task]!, repository: REPOSITORY, number: task + 1, autoFix: i % 2 === 0, autoMerge: i % 4 < 2 },
        })
      const errorCodes = (result.errors ?? []).map((e) => e.extensions?.code ?? '(none)')
      codes.push(...errorCodes)
      if (errorCodes.length === 0) return { done: true, attempts: attempt, codes }
      if (!errorCodes.every((c) => c === 'UNAVAILABLE')) return { done: false, attempts: attempt, codes }
      await new Promise((r) => setTimeout(r, 20 * attempt))
    }
    return { done: false, attempts: MAX_ATTEMPTS, codes }
  }
})

const branchOf = (task: number) => `r1-${task}`

/** A pull_request delivery for task `task`'s branch; its state varies with `i` so the aggregate moves. */
function pullRequestEvent(task: number, i: number) {
  return {
    action: 'synchronize',
    repository: { full_name: REPOSITORY },
    pull_request: {
      number: task + 1,
      html_url: `https://github.com/${REPOSITORY}/pull/${task + 1}`,
      title: `PR ${task}`,
      state: 'open',
      merged: false,
      draft: i % 2 === 1,
      mergeable_state: ['clean', 'dirty', 'blocked'][i % 3],
      head: { ref: branchOf(task) },
    },
  }
}

async function deliver(instance: Instance, body: unknown, delivery = randomUUID()) {
  const raw = JSON.stringify(body)
  const response = await fetch(`http://127.0.0.1:${instance.port}/webhooks/github`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': delivery, 'x-hub-signature-256': sign(SECRET, raw) },
    body: raw,
  })
  await response.arrayBuffer()
  return { status: response.status }
}

type FeedEvent = { data?: { workspaceEvents: { __typename: string } & Partial<{ summary: SummaryFieldsFragment }> } | null }

function summariesOf(events: FeedEvent[]): SummaryFieldsFragment[] {
  return events.flatMap((e) => (e.data?.workspaceEvents.__typename === 'TaskStatusSummaryUpdated' ? [e.data.workspaceEvents.summary!] : []))
}

function lastDelivered(events: FeedEvent[], taskId: string): SummaryFieldsFragment | undefined {
  return summariesOf(events).filter((s) => s.taskId === taskId).at(-1)
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1
  return counts
}
