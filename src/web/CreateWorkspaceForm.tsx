import { useState } from 'react'
import type { TaskClient } from '@task-status/client'
import { FormError } from './FormError.tsx'
import { useAction } from './use-action.ts'

/** A workspace by name (the caller becomes its member); used by the empty state and the Workspace panel. */
export function CreateWorkspaceForm(props: { client: TaskClient; onCreated: (workspace: { id: string; name: string }) => void; submitLabel?: string }) {
  const [name, setName] = useState('')
  const { busy, error, run } = useAction()
  return (
    <form
      className="panel-form"
      data-form="create-workspace"
      onSubmit={(e) => {
        e.preventDefault()
        void run(() => props.client.createWorkspace(name)).then((workspace) => {
          if (!workspace) return
          setName('')
          props.onCreated(workspace)
        })
      }}
    >
      <label>
        Workspace name
        <input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} />
      </label>
      <button type="submit" disabled={busy}>
        {props.submitLabel ?? 'Create workspace'}
      </button>
      <FormError error={error} />
    </form>
  )
}
