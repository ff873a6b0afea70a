import type { RunningServer } from '../../src/app/start-server.ts'
import { ok } from './client.ts'
import { eventually } from './wait.ts'
import { CreateUserDocument, CreateWorkspaceDocument } from '../generated/graphql.ts'

/** A user (made by the admin) with a workspace of its own. */
export async function userWithWorkspace(server: { graphqlUrl: string; adminToken: string }, name: string) {
  const token = (await ok(server.graphqlUrl, server.adminToken, CreateUserDocument, { name })).createUser.token
  const workspaceId = (await ok(server.graphqlUrl, token, CreateWorkspaceDocument, { name: `${name}'s` })).createWorkspace.id
  return { token, workspaceId }
}

/** Waits until the session has no turn in flight and is waiting for input (polls the stored state). */
export function sessionSettled(server: Pick<RunningServer, 'store'>, sessionId: string) {
  return eventually(async () => {
    const s = await server.store.db.session.findUniqueOrThrow({ where: { id: sessionId }, include: { turns: true } })
    return s.state === 'WAITING_FOR_INPUT' && s.turns.every((t) => t.completedAt) && s
  }, 60_000)
}
