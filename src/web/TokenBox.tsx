import { useEffect, useRef, useState } from 'react'

/**
 * A token just issued (createUser, rotateUserToken), shown this once. It lives only in the owner's
 * state until dismissed: never in localStorage, the URL, or anywhere after "Done".
 */
export function TokenBox(props: { userName: string; token: string; onDismiss: () => void }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null)
  const field = useRef<HTMLInputElement>(null)
  const copyButton = useRef<HTMLButtonElement>(null)

  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    copyButton.current?.focus()
    return () => {
      if (opener?.isConnected) opener.focus()
    }
  }, [])

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.token)
      setCopied('yes')
    } catch {
      // No clipboard API (plain http on another host): leave the text selected for Ctrl+C.
      field.current?.select()
      setCopied('failed')
    }
  }

  return (
    <div className="token-box" role="region" aria-label={`New token for ${props.userName}`} data-token-box>
      <p>
        <strong>Token for {props.userName}.</strong> Copy it now: it will not be shown again.
      </p>
      <input ref={field} readOnly value={props.token} aria-label={`Token for ${props.userName}`} onFocus={(e) => e.currentTarget.select()} />
      <div className="token-actions">
        <button type="button" ref={copyButton} onClick={() => void copy()}>
          Copy
        </button>
        <button type="button" className="secondary" onClick={props.onDismiss}>
          Done
        </button>
        <span role="status" className="muted">
          {copied === 'yes' ? 'Copied.' : copied === 'failed' ? 'Select the token and copy it.' : ''}
        </span>
      </div>
    </div>
  )
}
