import { useState } from 'react'
import type { NewTaskRepository, TaskClient } from '@task-status/client'
import { FormError } from './FormError.tsx'
import { useAction } from './use-action.ts'

interface RepositoryRow {
  key: number
  name: string
  localPath: string
}

/** A GitHub URL (https or ssh) becomes the owner/name the schema expects; anything else is sent as typed. */
export function repositoryName(typed: string): string {
  const text = typed.trim()
  const github = /^(?:https?:\/\/(?:www\.)?github\.com\/|git@github\.com:)([^/\s]+)\/([^/\s]+?)(?:\.git)?\/?$/i.exec(text)
  return github ? `${github[1]}/${github[2]}` : text
}

/** Rows left wholly blank are dropped; any other row is sent, so the server names what is wrong with it. */
function repositoriesOf(rows: RepositoryRow[]): NewTaskRepository[] {
  return rows
    .filter((r) => r.name.trim() || r.localPath.trim())
    .map((r) => ({ name: repositoryName(r.name), ...(r.localPath.trim() && { localPath: r.localPath.trim() }) }))
}

let nextKey = 0

/** Title, optional description and zero or more repositories (name or URL, optional local checkout). */
export function NewTaskForm(props: { client: TaskClient; workspaceId: string; onCreated: (taskId: string) => void }) {
  const [title, setTitle] = useState('')
  const [description, setDescription] = useState('')
  const [rows, setRows] = useState<RepositoryRow[]>([])
  const { busy, error, run } = useAction()
  const edit = (key: number, patch: Partial<RepositoryRow>) => setRows((all) => all.map((r) => (r.key === key ? { ...r, ...patch } : r)))

  return (
    <form
      className="panel-form"
      data-form="new-task"
      onSubmit={(e) => {
        e.preventDefault()
        const task = { workspaceId: props.workspaceId, title, ...(description.trim() && { description }), repositories: repositoriesOf(rows) }
        void run(() => props.client.createTask(task)).then((created) => created && props.onCreated(created.id))
      }}
    >
      <label>
        Title
        <input value={title} onChange={(e) => setTitle(e.target.value)} maxLength={500} />
      </label>
      <label>
        Description (optional)
        <textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={3} />
      </label>
      <fieldset className="repositories">
        <legend>Repositories</legend>
        {rows.length === 0 && <p className="muted">None: the agent works without a checkout.</p>}
        {rows.map((row, index) => (
          <div className="repository-row" key={row.key} data-repository-row={index}>
            <label>
              Repository {index + 1} (owner/name or URL)
              <input value={row.name} onChange={(e) => edit(row.key, { name: e.target.value })} placeholder="acme/web" />
            </label>
            <label>
              Local path (optional)
              <input value={row.localPath} onChange={(e) => edit(row.key, { localPath: e.target.value })} placeholder="/srv/checkouts/web" />
            </label>
            <button type="button" className="secondary" onClick={() => setRows((all) => all.filter((r) => r.key !== row.key))}>
              Remove repository {index + 1}
            </button>
          </div>
        ))}
        <button type="button" className="secondary" onClick={() => setRows((all) => [...all, { key: nextKey++, name: '', localPath: '' }])}>
          Add repository
        </button>
      </fieldset>
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create task'}
      </button>
      <FormError error={error} />
    </form>
  )
}
