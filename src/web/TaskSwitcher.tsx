import { useEffect, useRef, useState, type KeyboardEvent } from 'react'
import type { TaskClient } from '@task-status/client'
import { TaskList } from './TaskList.tsx'

interface SwitcherProps {
  client: TaskClient
  selectedTaskId: string | null
  onSelect: (taskId: string) => void
}

/** Desktop: a sidebar always beside the session pane. */
export function TaskSidebar(props: SwitcherProps) {
  return (
    <nav className="sidebar" data-switcher="desktop" aria-label="Task switcher">
      <TaskList {...props} />
    </nav>
  )
}

/** Phone: the same rows in a sheet over the session pane, opened from the header. */
export function TaskSheet(props: SwitcherProps & { open: boolean; onClose: () => void }) {
  if (!props.open) return null
  return <OpenSheet {...props} />
}

const FOCUSABLE = 'button:not([disabled]):not([tabindex="-1"]), select, [tabindex="0"]'

/**
 * A modal dialog: focus moves into it when it opens (to the list's one Tab stop), Tab stays inside
 * it, Escape closes it, and focus goes back to what opened it. While it is open its rows hold their
 * order: on touch there is no hover between taps, and the sheet is open only to pick a row.
 */
function OpenSheet(props: SwitcherProps & { onClose: () => void }) {
  const sheet = useRef<HTMLDivElement>(null)
  // Read at the first render, before the list (whose effects run first) takes focus.
  const [opener] = useState(() => (document.activeElement instanceof HTMLElement ? document.activeElement : null))
  useEffect(() => {
    // The list focuses its Tab stop once it has rows; until then the dialog itself holds focus.
    if (!sheet.current?.contains(document.activeElement)) sheet.current?.focus()
    return () => {
      if (opener?.isConnected) opener.focus()
    }
  }, [opener])
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key === 'Escape') {
      e.preventDefault()
      props.onClose()
      return
    }
    if (e.key !== 'Tab') return
    const focusable = [...(sheet.current?.querySelectorAll<HTMLElement>(FOCUSABLE) ?? [])]
    const first = focusable[0]
    const last = focusable.at(-1)
    if (e.shiftKey && document.activeElement === first) {
      e.preventDefault()
      last?.focus()
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault()
      first?.focus()
    }
  }
  return (
    <div className="sheet-backdrop" onClick={props.onClose}>
      <div className="sheet" ref={sheet} data-switcher="phone" role="dialog" aria-modal="true" aria-label="Tasks" tabIndex={-1} onClick={(e) => e.stopPropagation()} onKeyDown={onKeyDown}>
        <div className="sheet-top">
          <div className="sheet-handle" />
          <button type="button" className="secondary sheet-close" onClick={props.onClose}>
            Close
          </button>
        </div>
        <TaskList client={props.client} selectedTaskId={props.selectedTaskId} onSelect={props.onSelect} alwaysHold focusOnRows />
      </div>
    </div>
  )
}
