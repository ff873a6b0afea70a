import { useEffect, useState } from 'react'
import { useStore } from 'zustand'
import { createTaskClient, type TaskClient } from '../client/index.ts'
import { SessionPane, errorText } from './SessionPane.tsx'
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
  // Made in an effect, not a memo: the client owns a socket, and the effect's cleanup is what closes it.
  const [client, setClient] = useState<TaskClient | null>(null)
  useEffect(() => {
    const created = createTaskClient({ url: new URL('/graphql', window.location.href).href, token: props.token })
    setClient(created)
    return () => created.dispose()
  }, [props.token])
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

  useEffect(() => {
    if (!workspaceId) return
    client.openWorkspace(workspaceId).catch((e: unknown) => setError(errorText(e)))
  }, [client, workspaceId])

  if (error)
    return (
      <div className="sign-in">
        <p className="error-text">{error}</p>
        <button type="button" onClick={props.onSignOut}>
          Use another token
        </button>
      </div>
    )
  if (workspaces?.length === 0)
    return (
      <div className="sign-in" data-empty="no-workspace">
        <h1>No workspace yet</h1>
        <p>
          This token is not a member of any workspace. Create one in <a href="/graphql">GraphiQL</a> with{' '}
          <code>mutation {'{'} createWorkspace(name: "Acme") {'{'} id {'}'} {'}'}</code>, then reload; or run <code>npm run demo</code> for a
          seeded one.
        </p>
        <button type="button" onClick={props.onSignOut}>
          Use another token
        </button>
      </div>
    )
  return (
    <Switcher client={client} workspaces={workspaces ?? []} workspaceId={workspaceId} onWorkspace={setWorkspaceId} onSignOut={props.onSignOut} />
  )
}

function Switcher(props: {
  client: TaskClient
  workspaces: { id: string; name: string }[]
  workspaceId: string | null
  onWorkspace: (id: string) => void
  onSignOut: () => void
}) {
  const { client } = props
  const phone = usePhoneLayout()
  const [selectedTaskId, setSelectedTaskId] = useState<string | null>(null)
  const [sheetOpen, setSheetOpen] = useState(false)
  const selected = useStore(client.summaries, (s) => (selectedTaskId ? (s.tasks[selectedTaskId] ?? null) : null))
  const connection = useStore(client.connection, (s) => s.status)
  const sessionId = selected?.summary?.primarySession?.id ?? null

  // Only the session on screen is subscribed. Every summary revision of the selected task renders a
  // new array here; the client diffs membership by id, so an unchanged set costs no frame.
  const visibleSessions = sessionId ? [sessionId] : []
  useEffect(() => {
    client.setVisibleSessions(visibleSessions)
  })

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
        <span className={`connection ${connection}`} data-connection={connection} title={`Connection: ${connection}`}>
          {connection}
        </span>
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
