// A React page using the packed SDK as an outside project would (test/package/sdk-package.test.ts
// builds it with Vite and opens it): served by the task status server, it reads `?token=` and
// `?workspace=` and lists the workspace's tasks; a task's session shows its transcript and a form.
import { StrictMode, useState, type FormEvent } from 'react'
import { createRoot } from 'react-dom/client'
import type { TaskClient } from '@task-status/client'
import { useSendMessage, useSession, useTaskClient, useTaskSummaries, useWorkspace } from '@task-status/client/react'

const params = new URLSearchParams(location.search)
const token = params.get('token')
const workspaceId = params.get('workspace')

function App() {
  const client = useTaskClient(token ? { url: `${location.origin}/graphql`, token } : null)
  return client ? <Tasks client={client} /> : <p>Connecting…</p>
}

function Tasks({ client }: { client: TaskClient }) {
  const { status, error } = useWorkspace(client, workspaceId)
  const rows = useTaskSummaries(client, 'LAST_ACTIVITY')
  const [selected, setSelected] = useState<{ taskId: string; sessionId: string } | null>(null)
  return (
    <main>
      <p data-status={status}>{error ? `Failed: ${String(error)}` : status}</p>
      <ul>
        {rows.map((row) => {
          const session = row.summary?.primarySession
          return (
            <li key={row.id} data-revision={row.summary?.revision}>
              <button type="button" disabled={!session} onClick={() => session && setSelected({ taskId: row.id, sessionId: session.id })}>
                {row.title}
              </button>
            </li>
          )
        })}
      </ul>
      {selected && <Session client={client} {...selected} />}
    </main>
  )
}

function Session({ client, taskId, sessionId }: { client: TaskClient; taskId: string; sessionId: string }) {
  const session = useSession(client, sessionId)
  const { send, sending, result } = useSendMessage(client)
  const [text, setText] = useState('')
  const submit = (event: FormEvent) => {
    event.preventDefault()
    void send({ taskId, sessionId, content: text }).then((sent) => sent && setText(''))
  }
  return (
    <section>
      <ol aria-label="Transcript">
        {session?.transcript.map((message) => (
          <li key={message.id} data-author={message.author}>
            {message.content}
          </li>
        ))}
      </ol>
      <form onSubmit={submit}>
        <label>
          Message <input value={text} onChange={(event) => setText(event.target.value)} />
        </label>
        <button type="submit" disabled={sending || !text}>
          Send
        </button>
        {result && <output>{result.outcome}</output>}
      </form>
    </section>
  )
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
)
