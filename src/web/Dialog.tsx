import { useEffect, useId, useRef, type ReactNode } from 'react'
import './panels.css'

/**
 * A modal `<dialog>` while mounted: focus moves to its first field, Escape (the dialog's own
 * cancel) or the Close button calls `onClose`, and on unmount focus goes back to what had it
 * before (the button that opened it). Full screen on a phone (panels.css).
 */
export function Dialog(props: { title: string; onClose: () => void; children: ReactNode; name: string }) {
  const ref = useRef<HTMLDialogElement>(null)
  const titleId = useId()
  const onClose = useRef(props.onClose)
  onClose.current = props.onClose

  useEffect(() => {
    const dialog = ref.current
    if (!dialog) return
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    if (!dialog.open) dialog.showModal()
    // showModal would focus the first focusable element, the Close button: the first field is what one types in.
    dialog.querySelector<HTMLElement>('[data-autofocus], input, select, textarea')?.focus()
    // The browser closes the dialog itself on Escape; the owner then unmounts it. The close event
    // comes a task later: one of a close this effect's cleanup made (StrictMode's remount) finds it open again.
    const closed = () => {
      if (!dialog.open) onClose.current()
    }
    dialog.addEventListener('close', closed)
    return () => {
      dialog.removeEventListener('close', closed)
      if (dialog.open) dialog.close()
      opener?.focus()
    }
  }, [])

  return (
    <dialog ref={ref} className="panel-dialog" aria-labelledby={titleId} data-dialog={props.name}>
      <div className="panel-header">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" className="secondary" onClick={() => props.onClose()}>
          Close
        </button>
      </div>
      <div className="panel-body">{props.children}</div>
    </dialog>
  )
}
