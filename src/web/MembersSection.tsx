import { useState } from 'react'
import type { TaskClient, User, WorkspaceMembers } from '@task-status/client'
import { FormError } from './FormError.tsx'
import { useAction } from './use-action.ts'

/**
 * The workspace's members: remove one, add one. The admin picks from every active user; a member
 * (who may not list users) types the user's id.
 */
export function MembersSection(props: {
  client: TaskClient
  workspace: WorkspaceMembers
  viewerId: string | null
  admin: boolean
  users: User[]
  onChanged: (workspace: WorkspaceMembers) => void
}) {
  const { client, workspace } = props
  const [userId, setUserId] = useState('')
  const { busy, error, run } = useAction()
  const memberIds = new Set(workspace.members.map((m) => m.id))
  const candidates = props.users.filter((u) => u.active && !memberIds.has(u.id))
  const change = (work: () => Promise<WorkspaceMembers>) =>
    run(work).then((changed) => {
      if (!changed) return false
      props.onChanged(changed)
      return true
    })

  return (
    <section className="panel-section" aria-labelledby="members-title" data-section="members">
      <h3 id="members-title">Members of {workspace.name}</h3>
      <ul className="entity-list">
        {workspace.members.map((member) => (
          <li key={member.id} data-member-id={member.id}>
            <span className="entity-name">
              {member.name}
              {member.id === props.viewerId && <span className="muted"> (you)</span>}
              {!member.active && <span className="muted"> (deactivated)</span>}
            </span>
            {member.id !== props.viewerId && (
              <button type="button" className="secondary" disabled={busy} aria-label={`Remove ${member.name}`} onClick={() => void change(() => client.removeWorkspaceMember(workspace.id, member.id))}>
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      <form
        className="inline-form"
        data-form="add-member"
        onSubmit={(e) => {
          e.preventDefault()
          const chosen = props.admin ? userId || candidates[0]?.id || '' : userId.trim()
          void change(() => client.addWorkspaceMember(workspace.id, chosen)).then((added) => added && setUserId(''))
        }}
      >
        {props.admin ? (
          <label>
            User to add
            <select value={userId || candidates[0]?.id || ''} onChange={(e) => setUserId(e.target.value)} disabled={candidates.length === 0}>
              {candidates.length === 0 && <option value="">Every active user is a member</option>}
              {candidates.map((u) => (
                <option key={u.id} value={u.id}>
                  {u.name}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <label>
            User id to add
            <input value={userId} onChange={(e) => setUserId(e.target.value)} />
          </label>
        )}
        <button type="submit" disabled={busy || (props.admin && candidates.length === 0)}>
          Add member
        </button>
      </form>
      <FormError error={error} />
    </section>
  )
}
