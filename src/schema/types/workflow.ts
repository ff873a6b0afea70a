import { builder } from '../builder.ts'
import { requireWorkspaceMember } from '../authorize.ts'
import type { WorkflowStepRow } from '../../store/rows.ts'
import { TaskRef } from './task.ts'

export const WorkflowStepRef = builder.objectRef<WorkflowStepRow>('WorkflowStep').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    position: t.exposeInt('position'),
    terminal: t.exposeBoolean('terminal', {
      description: 'True for steps such as Done: moving a task here clears a task-owned launch error.',
    }),
    tasks: t.field({
      type: [TaskRef],
      resolve: (step, _args, ctx) => ctx.loaders.tasksOfStep.load(step.id),
    }),
  }),
})

export const WorkflowSnapshotRef = builder.objectRef<{ workspaceId: string }>('WorkflowSnapshot').implement({
  fields: (t) => ({
    workspaceId: t.exposeID('workspaceId'),
    steps: t.field({
      type: [WorkflowStepRef],
      resolve: ({ workspaceId }, _args, ctx) => ctx.loaders.stepsOfWorkspace.load(workspaceId),
    }),
  }),
})

builder.queryField('workflow', (t) =>
  t.field({
    type: WorkflowSnapshotRef,
    description: 'The workflow board of a workspace: its steps with their tasks, each with statusSummary.',
    args: { workspaceId: t.arg.id({ required: true }) },
    resolve: async (_root, { workspaceId }, ctx) => {
      await requireWorkspaceMember(ctx, workspaceId)
      return { workspaceId }
    },
  }),
)
