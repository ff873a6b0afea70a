import { useEffect, useState } from 'react'
import type { AgentProfile, SessionInfo, TaskClient } from '@task-status/client'
import { FormError } from './FormError.tsx'
import { useAction } from './use-action.ts'

/** The server's agent profiles, read once per mount (null while loading). */
function useAgentProfiles(client: TaskClient) {
  const [profiles, setProfiles] = useState<AgentProfile[] | null>(null)
  const { error, run } = useAction()
  useEffect(() => {
    let live = true
    void run(() => client.agentProfiles()).then((list) => live && list && setProfiles(list))
    return () => {
      live = false
    }
  }, [client, run])
  return { profiles, error }
}

/** Starts a session of the task: an agent profile from `agentProfiles`, and an optional first prompt. */
export function StartSessionForm(props: { client: TaskClient; taskId: string; onStarted: (session: SessionInfo) => void }) {
  const { profiles, error: loadError } = useAgentProfiles(props.client)
  const [profile, setProfile] = useState('')
  const [prompt, setPrompt] = useState('')
  const { busy, error, run } = useAction()
  const chosen = profile || profiles?.[0]?.name || ''

  return (
    <form
      className="panel-form start-session"
      data-form="start-session"
      onSubmit={(e) => {
        e.preventDefault()
        const first = prompt.trim() ? prompt : undefined
        void run(() => props.client.startSession(props.taskId, first, { agentProfile: chosen })).then((session) => {
          if (!session) return
          setPrompt('')
          props.onStarted(session)
        })
      }}
    >
      <label>
        Agent profile
        <select value={chosen} onChange={(e) => setProfile(e.target.value)} disabled={!profiles}>
          {!profiles && <option value="">Loading…</option>}
          {profiles?.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        First prompt (optional)
        <textarea value={prompt} onChange={(e) => setPrompt(e.target.value)} rows={3} />
      </label>
      <button type="submit" disabled={busy || !chosen}>
        {busy ? 'Starting…' : 'Start session'}
      </button>
      <FormError error={loadError ?? error} />
    </form>
  )
}
