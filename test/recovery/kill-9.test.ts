// A real `kill -9` of the server's whole process group (server and agents) in the middle of
// streaming turns, a pending permission and a finished turn; then a restart on the same SQLite
// file. Nothing the dead process left open may stay open.
import type { ChildProcess } from 'node:child_process'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { tempDir } from '../support/databases.ts'
import { freePort } from '../support/postgres-cluster.ts'
import { spawnServer } from '../support/process.ts'
import { eventually } from '../support/wait.ts'

const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0))
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // The group is gone already.
    }
})

const ADMIN = 'kill-nine-admin-token-0123456789'
const STREAMING = 2

interface TurnShape {
  id: string
  completedAt: string | null
  interrupted: boolean
  stopReason: string | null
  lifecycleOnly: boolean
}
interface MessageShape {
  turnId: string | null
  kind: string
  author: string
  status: string | null
  content: string
}
interface SessionShape {
  state: string
  turns: TurnShape[]
  messages: MessageShape[]
}

function client(port: number) {
  return async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    const response = await fetch(`http://127.0.0.1:${port}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ query, variables }),
    })
    const body = (await response.json()) as { data?: T; errors?: unknown[] }
    if (body.errors || !body.data) throw new Error(JSON.stringify(body.errors))
    return body.data
  }
}

const SESSION = `query ($id: ID!, $content: Boolean!) { session(id: $id) { state
  turns(last: 50) { id completedAt interrupted stopReason lifecycleOnly }
  messages(last: 1000) { turnId kind author status content @include(if: $content) } } }`

/** Chunk i of the mock's stream is `i;`: a stored stream is exact when it is chunks 0 … n-1, nothing else. */
const exactPrefix = (content: string) => {
  const n = content.split(';').length - 1
  return content === Array.from({ length: n }, (_, i) => `${i};`).join('')
}

describe('after kill -9 of the server process group (sqlite)', () => {
  // Two real server starts and three agent processes: more than the default budget on a busy machine.
  it('the restart closes every turn left open as interrupted, gives every partial message a final status, cancels the unanswerable request, keeps transcripts exact, and a new turn ends COMPLETED', { timeout: 90_000 }, async () => {
    const env = { ADMIN_TOKEN: ADMIN, DATABASE_URL: `file:${path.join(tempDir('kill-9'), 'app.db')}` }
    const port = await freePort()
    const first = spawnServer(['--import', 'tsx', 'src/main.ts'], { ...env, PORT: String(port) }, children, { detached: true })
    await first.ready(port)
    const gql = client(port)
    const { createWorkspace } = await gql<{ createWorkspace: { id: string } }>('mutation { createWorkspace(name: "w") { id } }')
    const { createTask } = await gql<{ createTask: { id: string } }>('mutation ($ws: ID!) { createTask(input: { workspaceId: $ws, title: "t" }) { id } }', { ws: createWorkspace.id })
    const start = async (prompt: string) =>
      (await gql<{ startSession: { id: string } }>('mutation ($t: ID!, $p: String) { startSession(input: { taskId: $t, prompt: $p }) { id } }', { t: createTask.id, p: prompt })).startSession.id
    const session = (id: string, content = false) => gql<{ session: SessionShape }>(SESSION, { id, content }).then((d) => d.session)

    // One session with a turn that ended before the crash and one waiting on a permission; others streaming.
    const asking = await start('hello')
    const finishedTurn = await eventually(async () => (await session(asking)).turns.find((t) => !t.lifecycleOnly && t.completedAt))
    await gql('mutation ($i: AddMessageInput!) { addMessage(input: $i) { replayed } }', {
      i: { taskId: createTask.id, sessionId: asking, clientMessageId: 'ask', content: JSON.stringify({ script: [{ say: 'let me check' }, { permission: { title: 'Run tests?' } }] }) },
    })
    const streaming: string[] = []
    // Bursts with pauses: still streaming when the kill comes however fast the mock writes (a burst is a message of its own).
    const bursts = Array.from({ length: 300 }, () => [{ stream: { kind: 'message', count: 300 } }, { sleep: 100 }]).flat()
    for (let i = 0; i < STREAMING; i++) streaming.push(await start(JSON.stringify({ script: bursts })))
    await eventually(async () => (await session(asking)).messages.some((m) => m.kind === 'PERMISSION_REQUEST' && m.status === 'PENDING'))
    for (const id of streaming)
      await eventually(async () => {
        const s = await session(id)
        return s.state === 'RUNNING' && s.messages.some((m) => m.author === 'AGENT' && m.kind === 'MESSAGE' && m.status === 'IN_PROGRESS')
      })
    const summary = `query ($t: [ID!]!) { taskStatusSummaries(taskIds: $t) { pendingAction } }`
    expect((await gql<{ taskStatusSummaries: { pendingAction: string | null }[] }>(summary, { t: [createTask.id] })).taskStatusSummaries[0]!.pendingAction).toBe('PERMISSION')

    process.kill(-first.child.pid!, 'SIGKILL')
    await first.exited
    const openAtCrash = new Set<string>()

    const restartPort = await freePort()
    const second = spawnServer(['--import', 'tsx', 'src/main.ts'], { ...env, PORT: String(restartPort) }, children, { detached: true })
    await second.ready(restartPort)
    const again = client(restartPort)
    const after = (id: string) => again<{ session: SessionShape }>(SESSION, { id, content: true }).then((d) => d.session)

    for (const id of [...streaming, asking]) {
      const s = await after(id)
      expect(s.state).toBe('WAITING_FOR_INPUT')
      const userTurns = s.turns.filter((t) => !t.lifecycleOnly && t.id !== finishedTurn.id)
      expect(userTurns).toHaveLength(1)
      for (const turn of userTurns) {
        openAtCrash.add(turn.id)
        expect(turn).toMatchObject({ interrupted: true, stopReason: 'interrupted' })
      }
      expect(s.turns.filter((t) => t.completedAt === null)).toEqual([])
      expect(s.messages.filter((m) => m.status === 'IN_PROGRESS' || m.status === 'PENDING')).toEqual([])
      const agentText = s.messages.filter((m) => m.author === 'AGENT' && m.kind === 'MESSAGE' && m.turnId !== finishedTurn.id)
      expect(agentText.length).toBeGreaterThan(0)
      for (const m of agentText) expect(m.status).toBe('INTERRUPTED')
    }
    for (const id of streaming) {
      const [stream] = (await after(id)).messages.filter((m) => m.author === 'AGENT')
      expect(stream!.content.length).toBeGreaterThan(0)
      expect(exactPrefix(stream!.content)).toBe(true)
    }
    const askingAfter = await after(asking)
    expect(askingAfter.messages.find((m) => m.kind === 'PERMISSION_REQUEST')!.status).toBe('CANCELLED')
    expect((await again<{ taskStatusSummaries: { pendingAction: string | null }[] }>(summary, { t: [createTask.id] })).taskStatusSummaries[0]!.pendingAction).toBeNull()
    // The turn that ended before the crash keeps how it ended, its reply COMPLETED.
    expect(askingAfter.turns.find((t) => t.id === finishedTurn.id)).toMatchObject({ interrupted: false, stopReason: 'end_turn' })
    expect(askingAfter.messages.filter((m) => m.turnId === finishedTurn.id && m.author === 'AGENT').map((m) => [m.content, m.status])).toEqual([['echo: hello', 'COMPLETED']])
    expect(openAtCrash.size).toBe(STREAMING + 1)

    // A prompt after the restart relaunches the agent; its turn ends with every message complete.
    await again('mutation ($i: AddMessageInput!) { addMessage(input: $i) { replayed } }', {
      i: { taskId: createTask.id, sessionId: streaming[0], clientMessageId: 'after-restart', content: 'hello again' },
    })
    const settled = await eventually(async () => {
      const s = await after(streaming[0]!)
      const fresh = s.turns.filter((t) => !t.lifecycleOnly && !openAtCrash.has(t.id))
      return s.state === 'WAITING_FOR_INPUT' && fresh.length === 1 && fresh[0]!.completedAt !== null && { s, turn: fresh[0]! }
    })
    expect(settled.turn).toMatchObject({ interrupted: false, stopReason: 'end_turn' })
    const replies = settled.s.messages.filter((m) => m.turnId === settled.turn.id && m.author === 'AGENT')
    expect(replies.map((m) => [m.content, m.status])).toEqual([['echo: hello again', 'COMPLETED']])
    expect(settled.s.turns.filter((t) => t.completedAt === null)).toEqual([])

    second.child.kill('SIGTERM')
    expect(await second.exited).toBe(0)
  })
})
