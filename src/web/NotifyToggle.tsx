import { useEffect, useRef, useState } from 'react'
import type { TaskClient } from '@task-status/client'
import { initialNoticeState, observe, type AttentionNotice } from './attention-notices.ts'
import { claimNotice } from './notice-claims.ts'

const KEY = 'notify'

/**
 * "Notify me": opt-in desktop notifications when a task starts waiting on its user or gets an
 * error. Permission is asked only when the user turns them on; one notification per request across
 * every tab of the browser; clicking one focuses the window and opens the task.
 */
export function NotifyToggle(props: { client: TaskClient; onOpen: (taskId: string) => void }) {
  const [wanted, setWanted] = useState(() => window.localStorage.getItem(KEY) === 'on')
  const [problem, setProblem] = useState<string | null>(null)
  const supported = typeof Notification !== 'undefined'
  const enabled = wanted && supported && Notification.permission === 'granted'
  const decided = useAttentionNotifications(props.client, enabled, props.onOpen)

  const turn = (on: boolean) => {
    window.localStorage.setItem(KEY, on ? 'on' : 'off')
    setWanted(on)
  }
  const toggle = async () => {
    setProblem(null)
    if (enabled) return turn(false)
    if (!supported) return setProblem('This browser cannot show notifications.')
    const permission = Notification.permission === 'default' ? await Notification.requestPermission() : Notification.permission
    if (permission === 'granted') turn(true)
    else setProblem('Notifications are blocked for this page in the browser’s settings.')
  }
  return (
    <>
      <button type="button" className="secondary notify-toggle" aria-pressed={enabled} data-decided={decided} onClick={() => void toggle()}>
        Notify me
      </button>
      {problem && (
        <span className="error-text notify-problem" role="status">
          {problem}
        </span>
      )}
    </>
  )
}

/**
 * While `enabled`: observes the summary store (the first observation is the baseline, see observe),
 * claims each new notice across tabs and shows the ones this tab won. Returns how many notices this
 * tab has decided (shown or left to another tab), which tests wait on.
 */
function useAttentionNotifications(client: TaskClient, enabled: boolean, onOpen: (taskId: string) => void): number {
  const [decided, setDecided] = useState(0)
  const open = useRef(onOpen)
  open.current = onOpen
  useEffect(() => {
    if (!enabled) return
    let state = initialNoticeState
    let live = true
    const show = (notice: AttentionNotice) => {
      const notification = new Notification(notice.title, { body: notice.body, tag: notice.key })
      notification.onclick = () => {
        window.focus()
        open.current(notice.taskId)
        notification.close()
      }
    }
    const run = () => {
      const result = observe(state, client.summaries.getState())
      state = result.state
      for (const notice of result.notices)
        void claimNotice(notice.key).then((won) => {
          if (!live) return
          if (won) show(notice)
          setDecided((n) => n + 1)
        })
    }
    run()
    const unsubscribe = client.summaries.subscribe(run)
    return () => {
      live = false
      unsubscribe()
    }
  }, [client, enabled])
  return decided
}
