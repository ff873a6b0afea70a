import { forbidden, notFound, unauthenticated } from '../errors.ts'
import type { Principal } from '../store/users.ts'
import type { Context } from './context.ts'

export function requirePrincipal(ctx: Context): Principal {
  if (!ctx.principal) throw unauthenticated()
  return ctx.principal
}

export function requireAdmin(ctx: Context): Principal {
  const principal = requirePrincipal(ctx)
  if (!principal.isAdmin) throw forbidden('admin operations')
  return principal
}

/** Membership gates every read, mutation and subscription of a workspace's data. */
export async function requireWorkspaceMember(ctx: Context, workspaceId: string): Promise<void> {
  const principal = requirePrincipal(ctx)
  // A member's workspace exists (workspaces are never deleted): the common case is one cached read.
  if (await ctx.access.isMember(principal.userId, workspaceId)) return
  const workspace = await ctx.loaders.workspace.load(workspaceId)
  if (!workspace) throw notFound('Workspace', workspaceId)
  // The message names no id: a task or session id asked for would otherwise tell a non-member which workspace holds it.
  throw forbidden('this workspace')
}

/** Loads a task the caller may read, or throws NOT_FOUND / FORBIDDEN. */
export async function requireReadableTask(ctx: Context, taskId: string) {
  requirePrincipal(ctx)
  const task = await ctx.loaders.task.load(taskId)
  if (!task) throw notFound('Task', taskId)
  await requireWorkspaceMember(ctx, task.workspaceId)
  return task
}

/** Loads a session the caller may read (null when unknown), or throws FORBIDDEN. */
export async function requireReadableSession(ctx: Context, sessionId: string) {
  requirePrincipal(ctx)
  const session = await ctx.loaders.session.load(sessionId)
  if (!session) return null
  await requireReadableTask(ctx, session.taskId)
  return session
}
