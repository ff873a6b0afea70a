import { builder } from '../builder.ts'
import { requireAdmin, requirePrincipal } from '../authorize.ts'
import { boundedText } from '../validate.ts'
import { notFound, badInput } from '../../errors.ts'
import { createUserWithToken, deactivateUser, listUsers, rotateUserToken } from '../../store/users.ts'
import { workspacesOfUser } from '../../store/workspaces.ts'
import type { UserRow } from '../../store/rows.ts'
import { WorkspaceRef } from './workspace.ts'

export const UserRef = builder.objectRef<UserRow>('User').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    active: t.exposeBoolean('active', { description: 'False once deactivated: none of its tokens authenticates any more.' }),
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

builder.queryField('users', (t) =>
  t.field({
    type: [UserRef],
    description: 'Admin token only: every user, deactivated ones included.',
    resolve: (_root, _args, ctx) => {
      requireAdmin(ctx)
      return listUsers(ctx.store.db)
    },
  }),
)

builder.mutationField('rotateUserToken', (t) =>
  t.field({
    type: CreateUserPayloadRef,
    description: `Admin token, or the user itself for its own id. Returns a new token (shown once); every
earlier token of that user stops authenticating at once, and within 1 s every WebSocket opened
with one of them, on every instance, is closed with 4403.`,
    args: { userId: t.arg.id({ required: true }) },
    resolve: async (_root, { userId }, ctx) => {
      const caller = requirePrincipal(ctx)
      // A non-admin learns nothing about other ids (not even whether they exist).
      if (!caller.isAdmin && caller.userId !== userId) requireAdmin(ctx)
      const rotated = await rotateUserToken(ctx.store.db, userId)
      if (!rotated) throw notFound('User', userId)
      if (!rotated.token) throw badInput('The user is deactivated: its tokens cannot be rotated.', 'userId')
      await ctx.access.publish({ type: 'credentials-revoked', userId, keepTokenHash: rotated.tokenHash })
      return { user: rotated.user, token: rotated.token }
    },
  }),
)

builder.mutationField('deactivateUser', (t) =>
  t.field({
    type: UserRef,
    description: `Admin token only. None of the user's tokens authenticates any more; within 1 s every
WebSocket opened with one of them, on every instance, is closed with 4403. Sessions it started
keep running: they belong to their tasks.`,
    args: { userId: t.arg.id({ required: true }) },
    resolve: async (_root, { userId }, ctx) => {
      requireAdmin(ctx)
      const target = await ctx.loaders.user.load(userId)
      if (!target) throw notFound('User', userId)
      // The operator's way in is ADMIN_TOKEN; an admin deactivated would lock it out.
      if (target.isAdmin) throw badInput('An admin cannot be deactivated; set ADMIN_TOKEN to replace its token.', 'userId')
      const user = await deactivateUser(ctx.store.db, userId)
      if (!user) throw notFound('User', userId)
      await ctx.access.publish({ type: 'credentials-revoked', userId })
      return user
    },
  }),
)
