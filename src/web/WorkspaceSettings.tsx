import type { TaskClient } from '@task-status/client'
import { CreateWorkspaceForm } from './CreateWorkspaceForm.tsx'
import { FormError } from './FormError.tsx'
import { MembersSection } from './MembersSection.tsx'
import { UsersSection } from './UsersSection.tsx'
import { useDirectory } from './use-directory.ts'

/** The Workspace panel: its members, every user (admin only), and another workspace. */
export function WorkspaceSettings(props: { client: TaskClient; workspaceId: string; onWorkspaceCreated: (workspace: { id: string; name: string }) => void }) {
  const { client } = props
  const directory = useDirectory(client, props.workspaceId)
  return (
    <>
      <FormError error={directory.error} />
      {!directory.workspace && !directory.error && <p className="muted">Loading…</p>}
      {directory.workspace && (
        <MembersSection
          client={client}
          workspace={directory.workspace}
          viewerId={directory.viewerId}
          admin={directory.admin}
          users={directory.users}
          onChanged={directory.setWorkspace}
        />
      )}
      {directory.admin && <UsersSection client={client} users={directory.users} viewerId={directory.viewerId} onUser={directory.upsertUser} />}
      <section className="panel-section" aria-labelledby="new-workspace-title" data-section="new-workspace">
        <h3 id="new-workspace-title">New workspace</h3>
        <CreateWorkspaceForm client={client} onCreated={props.onWorkspaceCreated} />
      </section>
    </>
  )
}
