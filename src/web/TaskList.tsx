import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react'
import { TASK_ORDERS, type TaskClient, type TaskOrder, type TaskRow as TaskRowData } from '@task-status/client'
import { useTaskSummaries } from '@task-status/client/react'
import { TaskRow } from './TaskRow.tsx'
import { useAiming, useHeldOrder } from './use-held-order.ts'
import { ORDER_LABELS, useTaskOrder } from './use-task-order.ts'
import './switcher.css'

export interface TaskListProps {
  client: TaskClient
  selectedTaskId: string | null
  onSelect: (taskId: string) => void
  /** Hold the displayed order whatever the pointer and focus do (the phone sheet, while open). */
  alwaysHold?: boolean
  /** Move focus to the list's Tab stop once it has rows, unless focus went elsewhere meanwhile (the sheet as it opens). */
  focusOnRows?: boolean
}

/**
 * The switcher's rows under their order control. Rows never move under the pointer: while the user
 * aims at the switcher (pointer over it, keyboard focus in it) the displayed order is held, and a
 * "N changes — re-sort" button applies the fresh one on request. One Tab stop for the whole list;
 * the arrow keys, Home and End move between rows, Enter opens one.
 */
export function TaskList(props: TaskListProps) {
  const [order, setOrder] = useTaskOrder()
  const rows = useTaskSummaries(props.client, order)
  const { aiming, handlers } = useAiming()
  const fresh = useMemo(() => rows.map((r) => r.id), [rows])
  const held = useHeldOrder(fresh, aiming || props.alwaysHold === true, order)
  const byId = useMemo(() => new Map(rows.map((r) => [r.id, r])), [rows])
  const shown = held.ids.map((id) => byId.get(id)).filter((r): r is TaskRowData => r !== undefined)
  const [activeId, setActiveId] = useState<string | null>(null)
  const tabStop = [activeId, props.selectedTaskId].find((id) => id !== null && byId.has(id)) ?? shown[0]?.id
  const list = useRef<HTMLUListElement>(null)
  // The re-sort button leaves with the changes it applies: focus goes on to the list, not to the page.
  const refocus = useRef(false)
  useEffect(() => {
    if (!refocus.current) return
    refocus.current = false
    list.current?.querySelector<HTMLElement>('.task-row[tabindex="0"]')?.focus()
  })
  useEffect(() => {
    if (!props.focusOnRows || !tabStop) return
    // Only while focus is not on a control of the dialog yet (the rows may load after it opened).
    const dialog = list.current?.closest('[role="dialog"]')
    const active = document.activeElement
    if (dialog && active && active !== dialog && dialog.contains(active)) return
    list.current?.querySelector<HTMLElement>('.task-row[tabindex="0"]')?.focus()
  }, [props.focusOnRows, tabStop])
  const resort = () => {
    refocus.current = true
    held.applyNow()
  }

  const onKeyDown = (e: KeyboardEvent<HTMLUListElement>) => {
    const buttons = [...(list.current?.querySelectorAll<HTMLButtonElement>('.task-row') ?? [])]
    const at = buttons.indexOf(document.activeElement as HTMLButtonElement)
    const target = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: buttons.length - 1 }[e.key]
    if (target === undefined || at < 0) return
    e.preventDefault()
    buttons[Math.max(0, Math.min(buttons.length - 1, target))]?.focus()
  }

  return (
    <div className="task-switcher" {...handlers}>
      <div className="switcher-header">
        <label className="order-choice">
          <span>Order</span>
          <select value={order} onChange={(e) => setOrder(e.target.value as TaskOrder)} data-control="order">
            {TASK_ORDERS.map((o) => (
              <option key={o} value={o}>
                {ORDER_LABELS[o]}
              </option>
            ))}
          </select>
        </label>
        {held.changes > 0 && (
          <button type="button" className="secondary resort" data-action="resort" onClick={resort}>
            {held.changes} {held.changes === 1 ? 'change' : 'changes'} — re-sort
          </button>
        )}
      </div>
      <ul className="task-list" aria-label="Tasks" ref={list} onKeyDown={onKeyDown} data-holding={aiming || props.alwaysHold ? 'true' : 'false'}>
        {shown.map((task) => (
          <TaskRow key={task.id} task={task} selected={task.id === props.selectedTaskId} tabbable={task.id === tabStop} onSelect={props.onSelect} onFocusRow={setActiveId} />
        ))}
      </ul>
    </div>
  )
}
