import { useRef, useState } from 'react'
import type { IssuedToken, TaskClient, User } from '@task-status/client'
import { FormError } from './FormError.tsx'
import { TokenBox } from './TokenBox.tsx'
import { useAction } from './use-action.ts'

/** Admin only: every user; create one, rotate a token, deactivate. A new token is shown once. */
export function UsersSection(props: { client: TaskClient; users: User[]; viewerId: string | null; onUser: (user: User) => void }) {
  const { client } = props
  const [name, setName] = useState('')
  // The one place a token is held, until "Done".
  const [issued, setIssued] = useState<IssuedToken | null>(null)
  const { busy, error, run } = useAction()
  const show = (result: IssuedToken) => {
    props.onUser(result.user)
    setIssued(result)
  }

  return (
    <section className="panel-section" aria-labelledby="users-title" data-section="users">
      <h3 id="users-title">Users</h3>
      <form
        className="inline-form"
        data-form="create-user"
        onSubmit={(e) => {
          e.preventDefault()
          void run(() => client.createUser(name)).then((created) => {
            if (!created) return
            setName('')
            show(created)
          })
        }}
      >
        <label>
          New user’s name
          <input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} />
        </label>
        <button type="submit" disabled={busy}>
          Create user
        </button>
      </form>
      <FormError error={error} />
      {issued && <TokenBox userName={issued.user.name} token={issued.token} onDismiss={() => setIssued(null)} />}
      <ul className="entity-list">
        {props.users.map((user) => (
          <UserEntry key={user.id} client={client} user={user} you={user.id === props.viewerId} onUser={props.onUser} onIssued={show} />
        ))}
      </ul>
    </section>
  )
}

/** One user: rotate its token, or deactivate it after a confirmation (there is no way back). */
function UserEntry(props: { client: TaskClient; user: User; you: boolean; onUser: (user: User) => void; onIssued: (issued: IssuedToken) => void }) {
  const { client, user } = props
  const [confirming, setConfirming] = useState(false)
  const deactivateButton = useRef<HTMLButtonElement>(null)
  const { busy, error, run } = useAction()
  const stopConfirming = () => {
    setConfirming(false)
    // The confirmation had focus: give it back to the button it replaced once that is back.
    requestAnimationFrame(() => deactivateButton.current?.focus())
  }
  // The admin's own token is the server's ADMIN_TOKEN: rotating it here would sign this page out.
  const actions = user.active && !props.you
  return (
    <li data-user-id={user.id} data-active={user.active}>
      <span className="entity-name">
        {user.name}
        {props.you && <span className="muted"> (you)</span>}
        {!user.active && <span className="muted"> (deactivated)</span>}
      </span>
      {actions && !confirming && (
        <span className="entity-actions">
          <button type="button" className="secondary" disabled={busy} aria-label={`Rotate token of ${user.name}`} onClick={() => void run(() => client.rotateUserToken(user.id)).then((r) => r && props.onIssued(r))}>
            Rotate token
          </button>
          <button type="button" ref={deactivateButton} className="secondary danger" disabled={busy} aria-label={`Deactivate ${user.name}`} onClick={() => setConfirming(true)}>
            Deactivate
          </button>
        </span>
      )}
      {actions && confirming && (
        <span className="entity-actions" role="group" aria-label={`Confirm deactivating ${user.name}`}>
          <span>Every token of {user.name} stops working, for good.</span>
          <button
            type="button"
            className="danger"
            disabled={busy}
            autoFocus
            onClick={() =>
              void run(() => client.deactivateUser(user.id)).then((changed) => {
                stopConfirming()
                if (changed) props.onUser(changed)
              })
            }
          >
            Yes, deactivate {user.name}
          </button>
          <button type="button" className="secondary" onClick={stopConfirming}>
            Cancel
          </button>
        </span>
      )}
      <FormError error={error} />
    </li>
  )
}
