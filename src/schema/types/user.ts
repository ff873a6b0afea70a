import { builder } from '../builder.ts'
import { requireAdmin, requirePrincipal } from '../authorize.ts'
import { boundedText } from '../validate.ts'
import { createUserWithToken } from '../../store/users.ts'
import { workspacesOfUser } from '../../store/workspaces.ts'
import type { UserRow } from '../../store/rows.ts'
import { WorkspaceRef } from './workspace.ts'

export const UserRef = builder.objectRef<UserRow>('User').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
  }),
})

const ViewerRef = builder.objectRef<{ userId: string }>('Viewer').implement({
  fields: (t) => ({
    user: t.field({
      type: UserRef,
      resolve: async ({ userId }, _args, ctx) => (await ctx.loaders.user.load(userId))!,
    }),
    workspaces: t.field({
      type: [WorkspaceRef],
      resolve: ({ userId }, _args, ctx) => workspacesOfUser(ctx.store, userId),
    }),
  }),
})

const CreateUserPayloadRef = builder.objectRef<{ user: UserRow; token: string }>('CreateUserPayload').implement({
  fields: (t) => ({
    user: t.field({ type: UserRef, resolve: (p) => p.user }),
    token: t.exposeString('token', { description: 'Shown once.' }),
  }),
})

builder.queryField('viewer', (t) =>
  t.field({
    type: ViewerRef,
    description: 'The caller and the workspaces it may read.',
    resolve: (_root, _args, ctx) => ({ userId: requirePrincipal(ctx).userId }),
  }),
)

builder.mutationField('createUser', (t) =>
  t.field({
    type: CreateUserPayloadRef,
    description: 'Admin token only.',
    args: { name: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => {
      requireAdmin(ctx)
      return createUserWithToken(ctx.store.db, boundedText('name', args.name, { max: 200 }))
    },
  }),
)
