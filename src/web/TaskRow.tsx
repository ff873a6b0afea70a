import { memo } from 'react'
import type { TaskRow as TaskRowData } from '@task-status/client'
import { attentionBadges, rowBadges, waitingBadge } from './badges.ts'
import { useMinuteClock } from './minute-clock.ts'

const primaryIcons: Record<string, string> = {
  permission: '⚠',
  clarification: '?',
  generating: '●',
  background: '◐',
  state: '○',
  none: '·',
}

const prLabels: Record<string, string> = {
  AWAITING_REVIEW: 'Review',
  BLOCKED: 'Blocked',
  CLOSED: 'Closed',
  DRAFT: 'Draft',
  FAILURE: 'Checks failing',
  MERGED: 'Merged',
  NEUTRAL: 'Open',
  PASSING: 'Checks passing',
  PENDING: 'Checks running',
  READY: 'Ready',
}

/**
 * One task of the switcher. The desktop sidebar and the phone sheet both render this, so their
 * badges and precedence cannot drift apart. Memoised by row: a summary replacement re-renders
 * only the row it belongs to.
 */
export const TaskRow = memo(function TaskRow(props: {
  task: TaskRowData
  selected: boolean
  /** The list's one Tab stop (the arrow keys move between the others). */
  tabbable: boolean
  onSelect: (taskId: string) => void
  onFocusRow: (taskId: string) => void
}) {
  const { task, selected } = props
  const badges = rowBadges(task.summary)
  const attention = attentionBadges(task.summary)
  const primaryKey = badges.primary.kind === 'state' ? badges.primary.state.toLowerCase() : badges.primary.kind
  return (
    <li>
      <button
        type="button"
        className={`task-row${selected ? ' selected' : ''}`}
        data-task-id={task.id}
        data-primary={primaryKey}
        data-revision={task.summary?.revision ?? 0}
        aria-current={selected ? 'true' : undefined}
        tabIndex={props.tabbable ? 0 : -1}
        onClick={() => props.onSelect(task.id)}
        onFocus={() => props.onFocusRow(task.id)}
      >
        <span className={`badge primary ${badges.primary.kind} ${primaryKey}`} data-badge="primary" title={badges.primary.label} role="img" aria-label={badges.primary.label}>
          {primaryIcons[badges.primary.kind]}
        </span>
        <span className="row-main">
          <span className="row-title">{task.title}</span>
          <span className="row-meta">
            <span className="state-label">{badges.primary.label}</span>
            {badges.error && <span className="error-preview">{badges.error.preview}</span>}
            {badges.subagents > 0 && (
              <span className="badge subagents" data-badge="subagents" title={`${badges.subagents} subagents running`}>
                {badges.subagents} {badges.subagents === 1 ? "subagent" : "subagents"}
              </span>
            )}
            {badges.git && (
              <span className="badge git" data-badge="git" title={badges.git.unavailable ? 'Some repository could not be compared' : 'Changes in the working tree'}>
                <span className="add">+{badges.git.additions}</span>
                <span className="del">−{badges.git.deletions}</span>
                <span className="files">
                  {badges.git.changedFiles} {badges.git.changedFiles === 1 ? 'file' : 'files'}
                </span>
                {badges.git.ahead > 0 && <span className="ahead">↑{badges.git.ahead}</span>}
                {badges.git.behind > 0 && <span className="behind">↓{badges.git.behind}</span>}
                {badges.git.unavailable && <span className="unavailable">?</span>}
              </span>
            )}
            {badges.pullRequest && (
              <span className={`badge pr ${badges.pullRequest.state.toLowerCase()}`} data-badge="pull-request" data-pr-state={badges.pullRequest.state}>
                PR{badges.pullRequest.number !== null ? ` #${badges.pullRequest.number}` : ''} · {prLabels[badges.pullRequest.state] ?? badges.pullRequest.state}
                {badges.pullRequest.autoMerge && <span className="automation" data-badge="auto-merge" title="Auto-merge on"> ⇉</span>}
                {badges.pullRequest.autoFix && <span className="automation" data-badge="auto-fix" title="Auto-fix on"> ✎</span>}
              </span>
            )}
            {task.summary?.waitingSince && <Waiting summary={task.summary} />}
            {attention.queued && (
              <span className="badge queued" data-badge="queued" title={attention.queued.label} aria-label={attention.queued.label} role="img">
                {attention.queued.text}
              </span>
            )}
            {attention.interruption && (
              <span className="badge interruption" data-badge="interruption" data-reason={attention.interruption.reason} title={attention.interruption.label} role="img" aria-label={attention.interruption.label}>
                {attention.interruption.text}
              </span>
            )}
          </span>
        </span>
        {badges.error && (
          <span className="badge error" data-badge="error" title={badges.error.preview} role="img" aria-label={`Error: ${badges.error.preview}`}>
            !
          </span>
        )}
      </button>
    </li>
  )
})

/** Its own component: only rows that wait re-render on the minute tick. */
function Waiting(props: { summary: NonNullable<TaskRowData['summary']> }) {
  const waiting = waitingBadge(props.summary, useMinuteClock())
  if (!waiting) return null
  return (
    <span className="badge waiting" data-badge="waiting" data-since={waiting.since} title={waiting.label} role="img" aria-label={waiting.label}>
      {waiting.text}
    </span>
  )
}
