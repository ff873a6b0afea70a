import { useId, useState } from 'react'
import { isRejectOption, type Message, type TaskClient } from '@task-status/client'
import { ToolCallBody } from './ToolCallView.tsx'
import { useAction } from './use-action.ts'

/**
 * What a session waits for: a permission (the agent's own options as buttons, in its order, with
 * what they would allow shown open) or a question (a free answer).
 */
export function PendingRequest(props: { client: TaskClient; sessionId: string; message: Message }) {
  const { message } = props
  if (!message.pendingId) return null
  return message.kind === 'PERMISSION_REQUEST' ? <PermissionRequest {...props} pendingId={message.pendingId} /> : <Clarification {...props} pendingId={message.pendingId} />
}

function PermissionRequest(props: { client: TaskClient; sessionId: string; message: Message; pendingId: string }) {
  const { client, sessionId, message, pendingId } = props
  const { busy, error, run } = useAction()
  const titleId = useId()
  const options = message.permissionOptions
  return (
    <div className="pending permission" role="group" data-pending-id={pendingId} aria-labelledby={titleId}>
      <span className="pending-title" id={titleId}>
        Permission: {message.content}
      </span>
      {message.toolCall && <ToolCallBody detail={message.toolCall} />}
      <div className="permission-options">
        {options.map((option) => (
          <button
            key={option.id}
            type="button"
            // The agent's id goes back as it came: the server accepts exactly the ids it offered.
            data-option-id={option.id}
            data-option-kind={option.kind}
            className={isRejectOption(option) ? 'secondary' : undefined}
            disabled={busy}
            aria-describedby={titleId}
            onClick={() => void run(() => client.respondToPermission(sessionId, pendingId, option.id))}
          >
            {option.name}
          </button>
        ))}
        {options.length === 0 && <span className="muted">The agent offered no choices: answer it where it runs, or stop the session.</span>}
      </div>
      {error && <span className="error-text">{error.message}</span>}
    </div>
  )
}

function Clarification(props: { client: TaskClient; sessionId: string; message: Message; pendingId: string }) {
  const { client, sessionId, message, pendingId } = props
  const [answer, setAnswer] = useState('')
  const { busy, error, run } = useAction()
  return (
    <form
      className="pending clarification"
      data-pending-id={pendingId}
      onSubmit={(e) => {
        e.preventDefault()
        if (answer.trim()) void run(() => client.answerClarification(sessionId, pendingId, answer.trim()))
      }}
    >
      <span className="pending-title">Question: {message.content}</span>
      <input value={answer} onChange={(e) => setAnswer(e.target.value)} placeholder="Your answer" aria-label="Answer" />
      <button type="submit" disabled={busy || !answer.trim()}>
        Answer
      </button>
      {error && <span className="error-text">{error.message}</span>}
    </form>
  )
}
