// P4's floor, run inside the server process beside the real server: the same list read by hand.
// A bare node:http route reads the page with the same statement the server's list runs
// (listTasks, the stored summary rows in it), builds the response's JSON shape from those rows
// as plain objects, JSON.stringify's it and writes it. What the GraphQL list costs above this is
// what building, executing and serializing it through Yoga adds: "ratio to the floor".
// Left out on purpose: the pending reconciliation (one more statement for the tasks with an open
// request; it changes nothing on this seed), authentication and Yoga's parse/validate.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { RunningServer } from '../src/app/start-server.ts'
import { encodeFeedCursor } from '../src/feed/cursor.ts'
import { encodeTaskCursor } from '../src/schema/cursor.ts'
import { ensureFeedEpoch, feedHead } from '../src/store/feed.ts'
import { listTasks } from '../src/store/tasks.ts'
import type { SummaryReadRow } from '../src/store/summaries.ts'
import type { SummaryPayload } from '../src/summary/types.ts'

export interface FloorRequest {
  query: 'tasks' | 'boot'
  summary: boolean
  workspaceId: string
  first: number
}

const iso = (s: string | null) => (s ? new Date(s).toISOString() : null)

/** StatusSummaryFields of a stored row, by hand, in the fragment's field order. */
function summaryJson(row: SummaryReadRow) {
  const p = JSON.parse(row.payload) as SummaryPayload
  const e = p.activeError
  const pr = p.pullRequest
  return {
    id: row.taskId,
    taskId: row.taskId,
    revision: row.revision,
    updatedAt: row.updatedAt.toISOString(),
    lastActivityAt: iso(p.lastActivityAt),
    primarySession: p.primarySession && { id: p.primarySession.id, state: p.primarySession.state },
    foregroundActivity: p.foregroundActivity,
    activeSubagentCount: p.activeSubagentCount,
    pendingAction: p.pendingAction,
    activeError: e && {
      sessionId: e.sessionId,
      taskRepositoryId: e.taskRepositoryId,
      stamp: e.stamp,
      occurredAt: iso(e.occurredAt),
      preview: e.preview,
      category: e.category,
      recoveryActions: e.recoveryActions ?? [],
    },
    git: p.git && {
      additions: p.git.additions,
      deletions: p.git.deletions,
      changedFiles: p.git.changedFiles,
      ahead: p.git.ahead,
      behind: p.git.behind,
      comparisonUnavailable: p.git.comparisonUnavailable,
    },
    pullRequest: pr && {
      count: pr.count,
      openCount: pr.openCount,
      aggregateState: pr.aggregateState,
      representative: pr.representative && { repository: pr.representative.repository, number: pr.representative.number, url: pr.representative.url },
      autoFixEnabled: pr.autoFixEnabled,
      autoMergeEnabled: pr.autoMergeEnabled,
    },
    waitingSince: iso(p.waitingSince),
    queuedPromptCount: p.queuedPromptCount,
    interruption: p.interruption && { sessionId: p.interruption.sessionId, reason: p.interruption.reason, at: iso(p.interruption.at) },
  }
}

export async function floorBody(server: RunningServer, epoch: string, request: FloorRequest): Promise<string> {
  const { store } = server
  const head = request.query === 'boot' ? await feedHead(store, request.workspaceId) : undefined
  const page = await listTasks(store, request.workspaceId, request.first, 'LAST_ACTIVITY', undefined, { summaries: request.summary })
  const edges = page.tasks.map((t, i) => {
    const summary = page.summaries?.get(t.id)
    const node = {
      id: t.id,
      title: t.title,
      workflowStepId: t.workflowStepId,
      createdAt: t.createdAt.toISOString(),
      updatedAt: t.updatedAt.toISOString(),
      ...(request.summary ? { statusSummary: summary ? summaryJson(summary) : null } : {}),
    }
    return { node, cursor: encodeTaskCursor(page.positions[i]!) }
  })
  const tasks = {
    edges: edges.map((e) => ({ node: e.node })),
    pageInfo: { hasNextPage: page.hasNextPage, endCursor: edges.at(-1)?.cursor ?? null },
  }
  const data =
    request.query === 'boot'
      ? { boot: { feedCursor: encodeFeedCursor({ epoch, workspaceId: request.workspaceId, sequence: head?.sequence ?? 0 }), tasks } }
      : { tasks }
  return JSON.stringify({ data })
}

let floor: Server | undefined

/** Starts the floor route (once) and returns its URL: POST a FloorRequest as JSON. */
export async function startFloor(server: RunningServer): Promise<string> {
  if (!floor) {
    const epoch = await ensureFeedEpoch(server.store)
    floor = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        floorBody(server, epoch, JSON.parse(Buffer.concat(chunks).toString('utf8')) as FloorRequest).then(
          (body) => res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body),
          (error: unknown) => res.writeHead(500).end(String(error)),
        )
      })
    })
    await new Promise<void>((resolve) => floor!.listen(0, '127.0.0.1', resolve))
    // The real server's close does not know this one: it must not keep the process alive.
    floor.unref()
  }
  return `http://127.0.0.1:${(floor.address() as AddressInfo).port}/`
}
