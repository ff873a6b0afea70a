import { useState } from 'react'
import type { TaskClient } from '@task-status/client'
import { Dialog } from './Dialog.tsx'
import { NewTaskForm } from './NewTaskForm.tsx'
import { usePhoneLayout } from './use-phone-layout.ts'
import { WorkspaceSettings } from './WorkspaceSettings.tsx'

/** The header's "New task" and "Workspace" buttons, and the dialogs they open. */
export function HeaderActions(props: {
  client: TaskClient
  workspaceId: string | null
  onTaskCreated: (taskId: string) => void
  onWorkspaceCreated: (workspace: { id: string; name: string }) => void
}) {
  const { client, workspaceId } = props
  const [open, setOpen] = useState<'task' | 'workspace' | null>(null)
  // A phone's bar has room for two icons beside the workspace, not two words.
  const phone = usePhoneLayout()
  const close = () => setOpen(null)
  return (
    <>
      <button type="button" className={phone ? 'icon' : undefined} data-action="new-task" aria-label="New task" title="New task" disabled={!workspaceId} onClick={() => setOpen('task')}>
        {phone ? '+' : 'New task'}
      </button>
      <button
        type="button"
        className={phone ? 'secondary icon' : 'secondary'}
        data-action="workspace-settings"
        aria-label="Workspace settings"
        title="Workspace settings"
        disabled={!workspaceId}
        onClick={() => setOpen('workspace')}
      >
        {phone ? '⚙' : 'Workspace'}
      </button>
      {open === 'task' && workspaceId && (
        <Dialog title="New task" name="new-task" onClose={close}>
          <NewTaskForm
            client={client}
            workspaceId={workspaceId}
            onCreated={(taskId) => {
              close()
              props.onTaskCreated(taskId)
            }}
          />
        </Dialog>
      )}
      {open === 'workspace' && workspaceId && (
        <Dialog title="Workspace" name="workspace" onClose={close}>
          <WorkspaceSettings
            client={client}
            workspaceId={workspaceId}
            onWorkspaceCreated={(workspace) => {
              close()
              props.onWorkspaceCreated(workspace)
            }}
          />
        </Dialog>
      )}
    </>
  )
}
