import { builder } from '../builder.ts'
import { requireAdmin, requirePrincipal, requireWorkspaceMember } from '../authorize.ts'
import { boundedText } from '../validate.ts'
import { badInput, notFound } from '../../errors.ts'
import { addMember, createWorkspace, removeMember } from '../../store/workspaces.ts'
import { linkRepository, unlinkRepository } from '../../store/github-links.ts'
import { parseRepositoryFullName } from '../../github/repository-name.ts'
import type { WorkspaceRow } from '../../store/rows.ts'
import type { Context } from '../context.ts'
import { UserRef } from './user.ts'

export const WorkspaceRef = builder.objectRef<WorkspaceRow>('Workspace').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    githubRepositories: t.stringList({
      description:
        "GitHub repositories (owner/name) whose signed deliveries may reach this workspace's task repositories. Set by the admin.",
      resolve: (workspace, _args, ctx) => ctx.loaders.githubRepositoriesOfWorkspace.load(workspace.id),
    }),
    members: t.field({
      type: [UserRef],
      description: 'The users who may read and act in this workspace.',
      resolve: (workspace, _args, ctx) => ctx.loaders.membersOfWorkspace.load(workspace.id),
    }),
  }),
})

builder.mutationField('createWorkspace', (t) =>
  t.field({
    type: WorkspaceRef,
    description: 'Creates a workspace with the default workflow (Backlog, In progress, Review, Done); the caller becomes its member.',
    args: { name: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) =>
      createWorkspace(ctx.store, boundedText('name', args.name, { max: 200 }), requirePrincipal(ctx).userId),
  }),
)

/** Membership changes: the admin or a member (checked first), then the workspace and the user must exist. */
async function membershipTarget(ctx: Context, workspaceId: string, userId: string) {
  if (!requirePrincipal(ctx).isAdmin) await requireWorkspaceMember(ctx, workspaceId)
  const workspace = await ctx.loaders.workspace.load(workspaceId)
  if (!workspace) throw notFound('Workspace', workspaceId)
  if (!(await ctx.loaders.user.load(userId))) throw notFound('User', userId)
  return workspace
}

builder.mutationField('addWorkspaceMember', (t) =>
  t.field({
    type: WorkspaceRef,
    description: 'Admin token or a member of the workspace.',
    args: { workspaceId: t.arg.id({ required: true }), userId: t.arg.id({ required: true }) },
    resolve: async (_root, { workspaceId, userId }, ctx) => {
      const workspace = await membershipTarget(ctx, workspaceId, userId)
      await addMember(ctx.store, workspaceId, userId)
      return workspace
    },
  }),
)

builder.mutationField('removeWorkspaceMember', (t) =>
  t.field({
    type: WorkspaceRef,
    description: `Admin token or a member of the workspace. From then on the removed user reads and acts
in it no more: within 1 s, on every instance, each of its open workspaceEvents and sessionEvents
subscriptions in that workspace ends with a FORBIDDEN error (its connection stays open for its
other workspaces), and its next operation there is FORBIDDEN.`,
    args: { workspaceId: t.arg.id({ required: true }), userId: t.arg.id({ required: true }) },
    resolve: async (_root, { workspaceId, userId }, ctx) => {
      const workspace = await membershipTarget(ctx, workspaceId, userId)
      // Published even when no membership was left: an earlier removal's event may have been missed.
      await removeMember(ctx.store, workspaceId, userId)
      await ctx.access.publish({ type: 'membership-removed', userId, workspaceId })
      return workspace
    },
  }),
)

/** Admin first (a member learns nothing about names), then the name, then the workspace. */
async function linkTarget(ctx: Context, workspaceId: string, repository: string) {
  requireAdmin(ctx)
  const name = parseRepositoryFullName(repository)
  if (!name) throw badInput('repository must be a GitHub full name, owner/name.', 'repository')
  const workspace = await ctx.loaders.workspace.load(workspaceId)
  if (!workspace) throw notFound('Workspace', workspaceId)
  return { workspace, name }
}

builder.mutationField('linkGitHubRepository', (t) =>
  t.field({
    type: WorkspaceRef,
    description:
      "Admin token only. Lets signed GitHub deliveries for repository (owner/name) reach this workspace's task repositories of that name.",
    args: { workspaceId: t.arg.id({ required: true }), repository: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const { workspace, name } = await linkTarget(ctx, args.workspaceId, args.repository)
      await linkRepository(ctx.store, workspace.id, name)
      return workspace
    },
  }),
)

builder.mutationField('unlinkGitHubRepository', (t) =>
  t.field({
    type: WorkspaceRef,
    description: 'Admin token only.',
    args: { workspaceId: t.arg.id({ required: true }), repository: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const { workspace, name } = await linkTarget(ctx, args.workspaceId, args.repository)
      await unlinkRepository(ctx.store, workspace.id, name)
      return workspace
    },
  }),
)
