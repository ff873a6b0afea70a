import { useEffect, useRef, useState } from 'react'
import type { Message, SendResult, TaskClient, TaskRow } from '@task-status/client'
import { useSendMessage, useSession } from '@task-status/client/react'
import { PendingRequest } from './PendingRequest.tsx'
import { SessionControls } from './SessionControls.tsx'
import { SessionPlan } from './SessionPlan.tsx'
import { StartSessionForm } from './StartSessionForm.tsx'
import { ToolCallDetails } from './ToolCallView.tsx'

/** The selected task's session (its primary, or one picked or started here): its live transcript, what it waits for, and a message box. */
export function SessionPane(props: { client: TaskClient; task: TaskRow | null }) {
  const { client, task } = props
  // A session picked or started here; otherwise the primary one (the feed names it).
  const [chosen, setChosen] = useState<{ taskId: string; sessionId: string } | null>(null)
  const sessionId = (chosen && chosen.taskId === task?.id ? chosen.sessionId : null) ?? task?.summary?.primarySession?.id ?? null

  if (!task) return <main className="pane empty">Pick a task.</main>
  const choose = (id: string) => setChosen({ taskId: task.id, sessionId: id })
  return (
    <main className="pane" data-task-id={task.id}>
      <header className="pane-header">
        <h1>{task.title}</h1>
        {task.summary?.primarySession && <span className="pane-state">{task.summary.primarySession.state.replaceAll('_', ' ').toLowerCase()}</span>}
        {sessionId && <SessionControls client={client} taskId={task.id} sessionId={sessionId} onChoose={choose} />}
      </header>
      {sessionId ? (
        <SessionView client={client} taskId={task.id} sessionId={sessionId} />
      ) : (
        <div className="no-session">
          <p>This task has no session yet. Start one:</p>
          <StartSessionForm client={client} taskId={task.id} onStarted={(session) => choose(session.id)} />
        </div>
      )}
    </main>
  )
}

function SessionView(props: { client: TaskClient; taskId: string; sessionId: string }) {
  const { client, sessionId } = props
  // Mounted while the session is on screen: the client follows its stream exactly that long.
  const view = useSession(client, sessionId)
  const messages = view?.transcript ?? []
  const pending = messages.filter((m) => (m.kind === 'PERMISSION_REQUEST' || m.kind === 'CLARIFICATION') && m.status === 'PENDING')
  const transcript = useRef<HTMLDivElement>(null)

  useEffect(() => {
    const el = transcript.current
    if (el) el.scrollTop = el.scrollHeight
  }, [messages.length, messages.at(-1)?.version])

  return (
    <>
      <SessionPlan session={view?.session ?? null} />
      <div className="transcript" ref={transcript} data-session-id={sessionId} aria-live="polite">
        {!view?.joined && <p className="muted">Loading the session…</p>}
        {messages.map((m) => (
          <MessageView key={m.id} message={m} />
        ))}
      </div>
      {pending.map((m) => (
        <PendingRequest key={m.id} client={client} sessionId={sessionId} message={m} />
      ))}
      <MessageBox client={client} taskId={props.taskId} sessionId={sessionId} />
    </>
  )
}

function MessageView({ message }: { message: Message }) {
  const kind = message.kind.toLowerCase().replace('_', '-')
  return (
    <div className={`message ${message.author.toLowerCase()} ${kind}`} data-message-id={message.id} data-kind={message.kind} data-status={message.status ?? ''}>
      <span className="who">{message.kind === 'MESSAGE' ? message.author.toLowerCase() : kind}</span>
      <div className="content">
        {message.content}
        {message.toolCall && <ToolCallDetails detail={message.toolCall} />}
      </div>
      {message.status && message.kind !== 'MESSAGE' && <span className="status">{message.status.toLowerCase().replaceAll('_', ' ')}</span>}
    </div>
  )
}

function MessageBox(props: { client: TaskClient; taskId: string; sessionId: string }) {
  const [text, setText] = useState('')
  const { send: sendMessage, sending, result, error } = useSendMessage(props.client)
  // An unconfirmed send keeps its id: sending the same text again can then only ever store it once.
  const unconfirmed = useRef<{ id: string; content: string } | null>(null)
  const send = () => {
    const content = text.trim()
    if (!content || sending) return
    // The client picks a fresh id for a new text (crypto.randomUUID exists only on https and localhost).
    const clientMessageId = unconfirmed.current?.content === content ? unconfirmed.current.id : undefined
    void sendMessage({ taskId: props.taskId, sessionId: props.sessionId, content, clientMessageId }).then((r: SendResult | null) => {
      if (!r) return
      if (r.outcome === 'unknown') unconfirmed.current = { id: r.clientMessageId, content }
      else {
        unconfirmed.current = null
        setText('')
      }
    })
  }
  return (
    <form
      className="message-box"
      onSubmit={(e) => {
        e.preventDefault()
        send()
      }}
    >
      <textarea
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault()
            send()
          }
        }}
        placeholder="Message the agent"
        aria-label="Message"
        rows={2}
      />
      <button type="submit" disabled={sending || !text.trim()}>
        {sending ? 'Sending…' : 'Send'}
      </button>
      {result?.outcome === 'unknown' && (
        <p className="error-text" data-send-outcome="unknown">
          Could not confirm the message was received. Sending again reuses the same id, so it is never stored twice.
        </p>
      )}
      {error != null && <p className="error-text">{errorText(error)}</p>}
    </form>
  )
}

export function errorText(error: unknown): string {
  if (Array.isArray(error)) return error.map(errorText).join('; ')
  if (error && typeof error === 'object' && 'message' in error) return String((error as { message: unknown }).message)
  return String(error)
}
