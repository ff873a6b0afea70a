import type { RunningServer } from '../../src/app/start-server.ts'
import { ok } from './client.ts'
import { eventually } from './wait.ts'
import { CreateTaskDocument, CreateUserDocument, CreateWorkspaceDocument, StartSessionDocument } from '../generated/graphql.ts'
import { startTestServer, type TestServer } from './server.ts'

/** A user (made by the admin) with a workspace of its own. */
export async function userWithWorkspace(server: { graphqlUrl: string; adminToken: string }, name: string) {
  const token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name })).createUser.token
  const workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: `${name}'s` })).createWorkspace.id
  return { token, workspaceId }
}

/**
 * A SQLite server that made a user, a workspace, a task and a started session, then stopped:
 * what a test of a restart edits in the database before the next server starts on it.
 */
export async function stoppedServerWithSession(servers: TestServer[], name: string) {
  const first = await startTestServer('sqlite')
  servers.push(first)
  const { token, workspaceId } = await userWithWorkspace(first, name)
  const taskId = (await ok(first.graphqlUrl, token, CreateTaskDocument, { input: { workspaceId, title: 't' } })).createTask.id
  const sessionId = (await ok(first.graphqlUrl, token, StartSessionDocument, { input: { taskId } })).startSession.id
  await first.close()
  return { first, token, taskId, sessionId }
}

/** Waits until the session has no turn in flight and is waiting for input (polls the stored state). */
export function sessionSettled(server: Pick<RunningServer, 'store'>, sessionId: string) {
  return eventually(async () => {
    const s = await server.store.db.session.findUniqueOrThrow({ where: { id: sessionId }, include: { turns: true } })
    return s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt) && s
  }, 60_000)
}
