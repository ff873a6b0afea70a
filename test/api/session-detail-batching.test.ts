import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROVIDERS } from '../support/databases.ts'
import { startTestServer, type TestServer } from '../support/server.ts'
import { ok } from '../support/client.ts'
import { userWithWorkspace } from '../support/fixtures.ts'
import { TaskSessionsDetailDocument } from '../generated/graphql.ts'
import { createTask } from '../../src/store/tasks.ts'
import { insertMessage } from '../../src/store/messages.ts'
import { createSession } from '../../src/store/sessions.ts'
import { startTurn } from '../../src/store/turns.ts'

describe.each(PROVIDERS)('Session.messages and Session.turns are batched (%s)', (provider) => {
  let server: TestServer
  let token: string
  let workspaceId: string
  const statements: string[] = []

  /** A task with `sessions` sessions, each with 3 turns of 2 messages, at distinct times. */
  async function taskWithSessions(sessions: number) {
    const task = await createTask(server.store, { workspaceId, title: `${sessions} sessions` })
    let clock = Date.parse('2026-01-01T00:00:00Z')
    for (let s = 0; s < sessions; s++) {
      const session = await createSession(server.store, { taskId: task.id, agentProfile: 'mock', state: 'WAITING_FOR_INPUT' })
      for (let t = 0; t < 3; t++) {
        const turn = await startTurn(server.store, { sessionId: session.id, startedAt: new Date((clock += 1000)) })
        for (let m = 0; m < 2; m++)
          await insertMessage(server.store, {
            id: `${session.id}-${t}-${m}`,
            sessionId: session.id,
            turnId: turn.id,
            author: 'AGENT',
            kind: 'MESSAGE',
            content: `s${s} t${t} m${m}`,
            createdAt: new Date((clock += 1000)),
          })
      }
    }
    return task.id
  }

  beforeAll(async () => {
    server = await startTestServer(provider, { onQuery: (sql) => statements.push(sql) })
    ;({ token, workspaceId } = await userWithWorkspace(server, 'reader'))
  })
  afterAll(() => server?.close())

  async function detail(taskId: string) {
    const variables = { id: taskId, lastMessages: 3, lastTurns: 2 }
    // Read once first: the caller and its membership are then cached on the instance (for seconds,
    // AccessControl), so both counts below are of the detail's own statements alike.
    await ok(server.graphqlUrl, token, TaskSessionsDetailDocument, variables)
    await server.projector.idle()
    statements.length = 0
    const { task } = await ok(server.graphqlUrl, token, TaskSessionsDetailDocument, variables)
    return { sessions: task!.sessions, statements: statements.length }
  }

  it('costs the same statements for 2 and 12 sessions and returns each session’s newest rows, oldest first', async () => {
    const few = await detail(await taskWithSessions(2))
    const many = await detail(await taskWithSessions(12))
    expect(many.sessions).toHaveLength(12)
    for (const [i, session] of many.sessions.entries()) {
      expect(session.messages.map((m) => m.content)).toEqual([`s${i} t1 m1`, `s${i} t2 m0`, `s${i} t2 m1`])
      expect(session.turns).toHaveLength(2)
      expect(Date.parse(session.turns[0]!.startedAt)).toBeLessThan(Date.parse(session.turns[1]!.startedAt))
    }
    console.info(`session detail statements: 2 sessions → ${few.statements}, 12 sessions → ${many.statements}`)
    expect(many.statements).toBe(few.statements)
  })
})
