import { useEffect, useState } from 'react'
import type { TaskClient } from '@task-status/client'
import { useConnection, useTaskClient, useTaskRow, useWorkspace } from '@task-status/client/react'
import { CreateWorkspaceForm } from './CreateWorkspaceForm.tsx'
import { HeaderActions } from './HeaderActions.tsx'
import { SessionPane, errorText } from './SessionPane.tsx'
import { NotifyToggle } from './NotifyToggle.tsx'
import { TaskSheet, TaskSidebar } from './TaskSwitcher.tsx'
import { storeToken, storedToken, takeTokenFromLocation } from './token.ts'
import { usePhoneLayout } from './use-phone-layout.ts'

export function App() {
  const [token, setToken] = useState(() => {
    const fromLink = takeTokenFromLocation(window.location, window.history)
    if (fromLink) storeToken(window.localStorage, fromLink)
    return fromLink ?? storedToken(window.localStorage)
  })
  // A #token= link opened in a tab that already shows the page changes only the hash.
  useEffect(() => {
    const onHash = () => {
      const fromLink = takeTokenFromLocation(window.location, window.history)
      if (!fromLink) return
      storeToken(window.localStorage, fromLink)
      setToken(fromLink)
    }
    window.addEventListener('hashchange', onHash)
    return () => window.removeEventListener('hashchange', onHash)
  }, [])
  const signOut = () => {
    storeToken(window.localStorage, null)
    setToken(null)
  }
  if (!token)
    return (
      <SignIn
        onToken={(t) => {
          storeToken(window.localStorage, t)
          setToken(t)
        }}
      />
    )
  return <Workspace key={token} token={token} onSignOut={signOut} />
}

function SignIn(props: { onToken: (token: string) => void }) {
  const [value, setValue] = useState('')
  return (
    <form
      className="sign-in"
      onSubmit={(e) => {
        e.preventDefault()
        if (value.trim()) props.onToken(value.trim())
      }}
    >
      <h1>Tasks</h1>
      <p>Paste your token. It stays in this browser only.</p>
      <input value={value} onChange={(e) => setValue(e.target.value)} placeholder="Token" aria-label="Token" autoFocus />
      <button type="submit" disabled={!value.trim()}>
        Sign in
      </button>
    </form>
  )
}

function Workspace(props: { token: string; onSignOut: () => void }) {
  // The hook makes the client in an effect: it owns a socket, and the effect's cleanup closes it.
  const client = useTaskClient({ url: new URL('/graphql', window.location.href).href, token: props.token })
  if (!client) return null
  return <WorkspaceView client={client} onSignOut={props.onSignOut} />
}

function WorkspaceView(props: { client: TaskClient; onSignOut: () => void }) {
  const { client } = props
  const [workspaces, setWorkspaces] = useState<{ id: string; name: string }[] | null>(null)
  const [workspaceId, setWorkspaceId] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)

  useEffect(() => {
    let live = true
    client
      .viewer()
      .then((viewer) => {
        if (!live) return
        setWorkspaces(viewer.workspaces)
        setWorkspaceId((current) => current ?? viewer.workspaces[0]?.id ?? null)
      })
      .catch((e: unknown) => live && setError(errorText(e)))
    return () => {
      live = false
    }
  }, [client])

  const workspace = useWorkspace(client, workspaceId)
  const addWorkspace = (created: { id: string; name: string }) => {
    setWorkspaces((all) => [...(all ?? []), created])
    setWorkspaceId(created.id)
  }
  const failure = error ?? (workspace.error ? errorText(workspace.error) : null)

  if (failure)
    return (
      <div className="sign-in">
        <p className="error-text">{failure}</p>
        <button type="button" onClick={props.onSignOut}>
          Use another token
        </button>
      </div>
    )
  if (workspaces?.length === 0)
    return (
      <div className="sign-in" data-empty="no-workspace">
        <h1>No workspace yet</h1>
        <p>This token is not a member of any workspace. Create one (you become its member), or ask a member to add you.</p>
        <CreateWorkspaceForm client={client} onCreated={addWorkspace} />
        <button type="button" onClick={props.onSignOut}>
          Use another token
        </button>
      </div>
    )
  return (
    <Switcher
      client={client}
      workspaces={workspaces ?? []}
      workspaceId={workspaceId}
      onWorkspace={setWorkspaceId}
      onWorkspaceCreated={addWorkspace}
      onSignOut={props.onSignOut}
    />
  )
}

function Switcher(props: {
  client: TaskClient
  workspaces: { id: string; name: string }[]
  workspaceId: string | null
  onWorkspace: (id: string) => void
  onWorkspaceCreated: (workspace: { id: string; name: string }) => void
  onSignOut: () => void
}) {
  const { client } = props
  const phone = usePhoneLayout()
  const [selectedTaskId, setSelectedTaskId] = useState<string | null>(null)
  const [sheetOpen, setSheetOpen] = useState(false)
  const selected = useTaskRow(client, selectedTaskId)
  const connection = useConnection(client).status

  const select = (taskId: string) => {
    setSelectedTaskId(taskId)
    setSheetOpen(false)
  }
  return (
    <div className={`app ${phone ? 'phone' : 'desktop'}`}>
      <header className="top-bar">
        {phone && (
          <button type="button" className="sheet-toggle" data-action="open-sheet" onClick={() => setSheetOpen(true)}>
            ☰ Tasks
          </button>
        )}
        <select value={props.workspaceId ?? ''} onChange={(e) => props.onWorkspace(e.target.value)} aria-label="Workspace">
          {props.workspaces.map((w) => (
            <option key={w.id} value={w.id}>
              {w.name}
            </option>
          ))}
        </select>
        <HeaderActions client={client} workspaceId={props.workspaceId} onTaskCreated={select} onWorkspaceCreated={props.onWorkspaceCreated} />
        <span className={`connection ${connection}`} data-connection={connection} title={`Connection: ${connection}`}>
          {connection}
        </span>
        <NotifyToggle client={client} onOpen={select} />
        <button type="button" className="secondary" onClick={props.onSignOut}>
          Sign out
        </button>
      </header>
      <div className="body">
        {!phone && <TaskSidebar client={client} selectedTaskId={selectedTaskId} onSelect={select} />}
        <SessionPane client={client} task={selected} />
      </div>
      {phone && <TaskSheet client={client} selectedTaskId={selectedTaskId} onSelect={select} open={sheetOpen} onClose={() => setSheetOpen(false)} />}
    </div>
  )
}
