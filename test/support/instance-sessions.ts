// Sessions driven through several server instances (test/support/instances.ts) as the admin:
// the documents and reads the multi-instance tests and fault tests share.
import { randomUUID } from 'node:crypto'
import { gql, gqlOk, type Instance } from './instances.ts'

const START = 'mutation ($t: ID!, $p: String) { startSession(input: { taskId: $t, prompt: $p }) { id } }'
const ADD =
  'mutation ($t: ID!, $s: ID!, $m: ID!, $c: String!) { addMessage(input: { taskId: $t, sessionId: $s, clientMessageId: $m, content: $c }) { replayed message { id content } } }'
const SESSION =
  'query ($id: ID!) { session(id: $id) { state turns(last: 50) { id completedAt interrupted lifecycleOnly } messages(last: 500) { id author kind status content pendingId } } }'

export interface SessionShape {
  state: string
  turns: { id: string; completedAt: string | null; interrupted: boolean; lifecycleOnly: boolean }[]
  messages: { id: string; author: string; kind: string; status: string | null; content: string; pendingId: string | null }[]
}

/** A mock agent script (MAPPING.md "The built-in mock agent") as prompt text. */
export const script = (...steps: object[]) => JSON.stringify({ script: steps })

/** A task in a workspace of its own. */
export async function newTask(instance: Instance): Promise<string> {
  const { createWorkspace } = await gqlOk<{ createWorkspace: { id: string } }>(instance, 'mutation { createWorkspace(name: "w") { id } }')
  const { createTask } = await gqlOk<{ createTask: { id: string } }>(instance, 'mutation ($w: ID!) { createTask(input: { workspaceId: $w, title: "t" }) { id } }', {
    w: createWorkspace.id,
  })
  return createTask.id
}

export const startSession = async (on: Instance, taskId: string, prompt?: string) =>
  (await gqlOk<{ startSession: { id: string } }>(on, START, { t: taskId, p: prompt ?? null })).startSession.id
export const session = async (on: Instance, id: string) => (await gqlOk<{ session: SessionShape }>(on, SESSION, { id })).session
export const addMessage = (on: Instance, taskId: string, sessionId: string, content: string, clientMessageId = randomUUID()) =>
  gql<{ addMessage: { replayed: boolean; message: { id: string; content: string } } }>(on, ADD, { t: taskId, s: sessionId, m: clientMessageId, c: content })
/** What the agent answered, in order (its message texts). */
export const agentSaid = (s: SessionShape) => s.messages.filter((m) => m.author === 'AGENT' && m.kind === 'MESSAGE').map((m) => m.content)
/** Waiting for input with no turn open. */
export const settled = (s: SessionShape) => s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt !== null)
