import type { TaskClient } from '@task-status/client'
import { useTaskSummaries } from '@task-status/client/react'
import { TaskRow } from './TaskRow.tsx'

export function TaskList(props: { client: TaskClient; selectedTaskId: string | null; onSelect: (taskId: string) => void; label: string }) {
  const tasks = useTaskSummaries(props.client)
  return (
    <ul className="task-list" aria-label={props.label}>
      {tasks.map((task) => (
        <TaskRow key={task.id} task={task} selected={task.id === props.selectedTaskId} onSelect={props.onSelect} />
      ))}
    </ul>
  )
}

/** Desktop: a sidebar always beside the session pane. */
export function TaskSidebar(props: { client: TaskClient; selectedTaskId: string | null; onSelect: (taskId: string) => void }) {
  return (
    <nav className="sidebar" data-switcher="desktop">
      <TaskList {...props} label="Tasks" />
    </nav>
  )
}

/** Phone: the same rows in a sheet over the session pane, opened from the header. */
export function TaskSheet(props: { client: TaskClient; selectedTaskId: string | null; onSelect: (taskId: string) => void; open: boolean; onClose: () => void }) {
  if (!props.open) return null
  return (
    <div className="sheet-backdrop" onClick={props.onClose}>
      <div className="sheet" data-switcher="phone" role="dialog" aria-label="Tasks" onClick={(e) => e.stopPropagation()}>
        <div className="sheet-handle" />
        <TaskList client={props.client} selectedTaskId={props.selectedTaskId} onSelect={props.onSelect} label="Tasks" />
      </div>
    </div>
  )
}
