// GraphQL over HTTP as a client sees it during a fault: how long the answer took, its HTTP status,
// Retry-After and first error code (the fault scenarios assert UNAVAILABLE 503 within a bound).
import { gqlOk, INSTANCE_ADMIN_TOKEN, type Instance } from './instances.ts'
import { script, session, settled, startSession } from './instance-sessions.ts'
import { eventually } from './wait.ts'

export interface TimedAnswer {
  ms: number
  status: number
  retryAfter: string | null
  code?: string
  data?: Record<string, unknown> | null
}

/** Gives up (throws) after 15 s: a frozen server fails the scenario instead of hanging it. */
export async function timedGraphql(instance: Instance, query: string, variables: Record<string, unknown>): Promise<TimedAnswer> {
  const started = performance.now()
  const response = await fetch(instance.url, {
    signal: AbortSignal.timeout(15_000),
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${INSTANCE_ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  })
  const body = (await response.json()) as { data?: Record<string, unknown> | null; errors?: { extensions?: { code?: string } }[] }
  return { ms: performance.now() - started, status: response.status, retryAfter: response.headers.get('retry-after'), code: body.errors?.[0]?.extensions?.code, data: body.data }
}

/** /healthz's answer time in ms. */
export async function timedHealthz(instance: Instance): Promise<number> {
  const started = performance.now()
  await fetch(`http://127.0.0.1:${instance.port}/healthz`, { signal: AbortSignal.timeout(15_000) }).then((r) => r.text())
  return performance.now() - started
}

/** /readyz's HTTP status and what it waits for. */
export async function readyz(instance: Instance): Promise<{ status: number; waitingFor?: string[] }> {
  const response = await fetch(`http://127.0.0.1:${instance.port}/readyz`, { signal: AbortSignal.timeout(15_000) })
  const { waitingFor } = (await response.json()) as { waitingFor?: string[] }
  return { status: response.status, waitingFor }
}

export const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.99))]!

export const CREATE_TASK = 'mutation ($w: ID!, $t: String!) { createTask(input: { workspaceId: $w, title: $t }) { id } }'
export const UPDATE_TASK = 'mutation ($id: ID!, $t: String!) { updateTask(id: $id, input: { title: $t }) { id title } }'
export const ADD_MESSAGE =
  'mutation ($t: ID!, $s: ID!, $m: ID!, $c: String!) { addMessage(input: { taskId: $t, sessionId: $s, clientMessageId: $m, content: $c }) { message { id } } }'
export const READ_TASK = 'query ($id: ID!) { task(id: $id) { id title statusSummary { revision } } }'
export const TASK_IDS = 'query ($w: ID!) { tasks(workspaceId: $w, first: 100) { edges { node { id title } } } }'

/**
 * After a fault ends: how long until a new task is accepted, then until /readyz is 200 again (ms
 * after `since`), with the accepted task's id (an acknowledged write the scenario checks later).
 */
export async function recovery(instance: Instance, workspaceId: string, since: number): Promise<{ taskId: string; writesMs: number; readyMs: number }> {
  const accepted = await eventually(async () => {
    const answer = await timedGraphql(instance, CREATE_TASK, { w: workspaceId, t: 'after the fault' })
    return answer.code === undefined ? answer : undefined
  }, 10_000)
  const writesMs = performance.now() - since
  await eventually(async () => (await readyz(instance)).status === 200, 5_000)
  return { taskId: (accepted.data!.createTask as { id: string }).id, writesMs, readyMs: performance.now() - since }
}

/** Before a fault: a workspace of its own, a task in it, and a session whose agent has answered and waits for input. */
export async function readySession(instance: Instance): Promise<{ workspaceId: string; taskId: string; sessionId: string }> {
  const { createWorkspace } = await gqlOk<{ createWorkspace: { id: string } }>(instance, 'mutation { createWorkspace(name: "fault") { id } }')
  const { createTask } = await gqlOk<{ createTask: { id: string } }>(instance, CREATE_TASK, { w: createWorkspace.id, t: 'before the fault' })
  const sessionId = await startSession(instance, createTask.id, script({ say: 'ready' }))
  await eventually(async () => settled(await session(instance, sessionId)), 30_000)
  return { workspaceId: createWorkspace.id, taskId: createTask.id, sessionId }
}
