import { useEffect, useState } from 'react'
import type { SessionInfo, TaskClient } from '@task-status/client'
import { Dialog } from './Dialog.tsx'
import { StartSessionForm } from './StartSessionForm.tsx'

const stateText = (session: SessionInfo) => session.state.replaceAll('_', ' ').toLowerCase()

/**
 * A task may hold several sessions (startSession adds one; the first is the primary): a picker
 * when there are several, and "New session", which starts one of a chosen profile in a dialog.
 */
export function SessionControls(props: { client: TaskClient; taskId: string; sessionId: string; onChoose: (sessionId: string) => void }) {
  const { client, taskId, sessionId } = props
  const [sessions, setSessions] = useState<SessionInfo[]>([])
  const [starting, setStarting] = useState(false)

  // Read again whenever the shown session changes: a session started here (or elsewhere) joins the list.
  useEffect(() => {
    let live = true
    client
      .loadTaskSessions(taskId)
      .then((list) => live && setSessions([...list].sort((a, b) => a.createdAt.localeCompare(b.createdAt))))
      .catch(() => undefined) // the picker is a convenience: without it the primary session still shows
    return () => {
      live = false
    }
  }, [client, taskId, sessionId])

  return (
    <div className="session-controls">
      {sessions.length > 1 && (
        <select className="session-picker" aria-label="Session" value={sessionId} onChange={(e) => props.onChoose(e.target.value)}>
          {sessions.map((s, i) => (
            <option key={s.id} value={s.id}>
              {`Session ${i + 1} · ${s.agentProfile} · ${stateText(s)}${s.isPrimary ? ' · primary' : ''}`}
            </option>
          ))}
        </select>
      )}
      <button type="button" className="secondary" onClick={() => setStarting(true)}>
        New session
      </button>
      {starting && (
        <Dialog title="New session" name="new-session" onClose={() => setStarting(false)}>
          <StartSessionForm
            client={client}
            taskId={taskId}
            onStarted={(session) => {
              setStarting(false)
              props.onChoose(session.id)
            }}
          />
        </Dialog>
      )}
    </div>
  )
}
