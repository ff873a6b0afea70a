import { builder } from '../builder.ts'
import { requirePrincipal, requireWorkspaceMember } from '../authorize.ts'
import { boundedText } from '../validate.ts'
import { notFound } from '../../errors.ts'
import { addMember, createWorkspace } from '../../store/workspaces.ts'
import type { WorkspaceRow } from '../../store/rows.ts'

export const WorkspaceRef = builder.objectRef<WorkspaceRow>('Workspace').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
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

builder.mutationField('addWorkspaceMember', (t) =>
  t.field({
    type: WorkspaceRef,
    description: 'Admin token or a member of the workspace.',
    args: { workspaceId: t.arg.id({ required: true }), userId: t.arg.id({ required: true }) },
    resolve: async (_root, { workspaceId, userId }, ctx) => {
      if (!requirePrincipal(ctx).isAdmin) await requireWorkspaceMember(ctx, workspaceId)
      const workspace = await ctx.loaders.workspace.load(workspaceId)
      if (!workspace) throw notFound('Workspace', workspaceId)
      if (!(await ctx.loaders.user.load(userId))) throw notFound('User', userId)
      await addMember(ctx.store, workspaceId, userId)
      return workspace
    },
  }),
)
