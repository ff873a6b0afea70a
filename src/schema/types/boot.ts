import { builder } from '../builder.ts'
import { requireWorkspaceMember } from '../authorize.ts'
import { encodeFeedCursor } from '../../feed/cursor.ts'
import { feedHead } from '../../store/feed.ts'
import type { WorkspaceRow } from '../../store/rows.ts'
import { taskPage, TaskConnectionRef } from './task.ts'
import { WorkflowSnapshotRef } from './workflow.ts'
import { WorkspaceRef } from './workspace.ts'

const BootStateRef = builder.objectRef<{ workspace: WorkspaceRow; serverTime: Date; feedCursor: string }>('BootState').implement({
  fields: (t) => ({
    workspace: t.field({ type: WorkspaceRef, resolve: (boot) => boot.workspace }),
    workflow: t.field({ type: WorkflowSnapshotRef, resolve: (boot) => ({ workspaceId: boot.workspace.id }) }),
    tasks: t.field({
      type: TaskConnectionRef,
      args: { first: t.arg.int({ defaultValue: 100 }), after: t.arg.string() },
      resolve: (boot, args, ctx, info) => taskPage(ctx, info, boot.workspace.id, args.first ?? 100, args.after),
    }),
    serverTime: t.expose('serverTime', { type: 'DateTime' }),
    feedCursor: t.exposeString('feedCursor', {
      description:
        'The workspace feed position this boot state reflects: pass it as workspaceEvents(after:) to follow on with no gap and no duplicate.',
    }),
  }),
})

builder.queryField('boot', (t) =>
  t.field({
    type: BootStateRef,
    description:
      'Everything a task switcher needs on first paint, summaries included, in a bounded number of database round trips.',
    args: { workspaceId: t.arg.id({ required: true }) },
    resolve: async (_root, { workspaceId }, ctx) => {
      await requireWorkspaceMember(ctx, workspaceId)
      // Read before the tasks and summaries are: whatever changes after it reaches the resumed feed.
      const head = await feedHead(ctx.store, workspaceId)
      return {
        workspace: (await ctx.loaders.workspace.load(workspaceId))!,
        serverTime: ctx.store.now(),
        feedCursor: encodeFeedCursor({ epoch: ctx.feed.epoch, workspaceId, sequence: head?.sequence ?? 0 }),
      }
    },
  }),
)
