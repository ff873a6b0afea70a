/**
 * React bindings of the SDK: hooks over the same zustand stores the core keeps, so a component
 * re-renders only when the slice it reads changes. Import from `@task-status/client/react`
 * (React 18 or newer); the core (`@task-status/client`) never imports React.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { useStore } from 'zustand'
import { createTaskClient, type TaskClient, type TaskClientOptions } from '../task-client.js'
import { sortTasks, type TaskOrder } from '../task-order.js'
import type { ConnectionState, Message, SendResult, SessionEntry, SummaryState, TaskRow } from '../types.js'

/**
 * A client for `options.url` and `options.token` while the component is mounted (null before the
 * first effect, or while `options` is null). A new url or token disposes the old client (its socket,
 * subscriptions and tables) and makes a new one; so does unmounting. Other options are read when
 * the client is made.
 */
export function useTaskClient(options: TaskClientOptions | null): TaskClient | null {
  const [client, setClient] = useState<TaskClient | null>(null)
  const latest = useRef(options)
  latest.current = options
  const url = options?.url
  const token = options?.token
  useEffect(() => {
    if (!url || !token) return
    const created = createTaskClient({ ...latest.current!, url, token })
    setClient(created)
    return () => {
      created.dispose()
      setClient((current) => (current === created ? null : current))
    }
  }, [url, token])
  return client
}

/** The socket's state: `connecting`, `connected`, `reconnecting` or `closed`, with the last close code. */
export function useConnection(client: TaskClient): ConnectionState {
  return useStore(client.connection)
}

/**
 * Opens the workspace while mounted with this id (boot, then its feed) and reports how far it got:
 * `booting`, `live`, `resyncing`, or `idle` with `error` when the boot failed for good.
 */
export function useWorkspace(client: TaskClient, workspaceId: string | null): { status: SummaryState['status']; error: unknown } {
  const [failure, setFailure] = useState<{ workspaceId: string; error: unknown } | null>(null)
  useEffect(() => {
    if (!workspaceId) return
    let live = true
    client.openWorkspace(workspaceId).catch((error: unknown) => {
      if (live) setFailure({ workspaceId, error })
    })
    return () => {
      live = false
    }
  }, [client, workspaceId])
  const status = useStore(client.summaries, (s) => (s.workspaceId === workspaceId ? s.status : 'idle'))
  return { status, error: failure?.workspaceId === workspaceId ? failure.error : null }
}

/** Every task of the open workspace with its status summary, in `order` (the orders of tasks(orderBy:)). */
export function useTaskSummaries(client: TaskClient, order: TaskOrder = 'LAST_ACTIVITY'): TaskRow[] {
  const tasks = useStore(client.summaries, (s) => s.tasks)
  return useMemo(() => sortTasks(Object.values(tasks), order), [tasks, order])
}

/** One task's row (null while the store does not hold it). */
export function useTaskRow(client: TaskClient, taskId: string | null): TaskRow | null {
  return useStore(client.summaries, (s) => (taskId ? (s.tasks[taskId] ?? null) : null))
}

/** Sessions held visible by mounted useSession hooks, per client, with how many hooks hold each. */
const held = new WeakMap<TaskClient, Map<string, number>>()

function holdSession(client: TaskClient, sessionId: string): () => void {
  let counts = held.get(client)
  if (!counts) held.set(client, (counts = new Map()))
  const table = counts
  table.set(sessionId, (table.get(sessionId) ?? 0) + 1)
  client.setVisibleSessions([...table.keys()])
  return () => {
    const left = (table.get(sessionId) ?? 1) - 1
    if (left > 0) table.set(sessionId, left)
    else table.delete(sessionId)
    client.setVisibleSessions([...table.keys()])
  }
}

/**
 * Follows one session's rich stream while mounted (several components may follow the same one; it
 * is subscribed once and completed when the last lets go) and returns its entry: the session, its
 * messages in transcript order, and whether the snapshot arrived. Null until the first snapshot.
 * Use either this hook or `client.setVisibleSessions` in one client, not both.
 */
export function useSession(client: TaskClient, sessionId: string | null): (SessionEntry & { transcript: Message[] }) | null {
  useEffect(() => (sessionId ? holdSession(client, sessionId) : undefined), [client, sessionId])
  const entry = useStore(client.sessions, (s) => (sessionId ? (s.byId[sessionId] ?? null) : null))
  return useMemo(() => (entry ? { ...entry, transcript: entry.messageIds.map((id) => entry.messages[id]).filter((m): m is Message => m !== undefined) } : null), [entry])
}

export interface SendMessageState {
  /**
   * addMessage with a stable clientMessageId (retried and reconciled by the client). Resolves with
   * the outcome, or null when it failed (the error is in `error`); it never rejects.
   */
  send: (input: { taskId: string; sessionId: string; content: string; clientMessageId?: string }) => Promise<SendResult | null>
  sending: boolean
  /** The outcome of the last send: `accepted`, `replayed`, or `unknown` (not confirmed after every retry). */
  result: SendResult | null
  error: unknown
}

/** Sends messages to a session; `sending` is true while any send is in flight. */
export function useSendMessage(client: TaskClient): SendMessageState {
  const [state, setState] = useState<{ inFlight: number; result: SendResult | null; error: unknown }>({ inFlight: 0, result: null, error: null })
  const mounted = useRef(true)
  useEffect(() => {
    mounted.current = true
    return () => {
      mounted.current = false
    }
  }, [])
  const send = useCallback<SendMessageState['send']>(
    async (input) => {
      setState((s) => ({ ...s, inFlight: s.inFlight + 1, error: null }))
      try {
        const result = await client.sendMessage(input)
        if (mounted.current) setState((s) => ({ inFlight: s.inFlight - 1, result, error: null }))
        return result
      } catch (error) {
        if (mounted.current) setState((s) => ({ inFlight: s.inFlight - 1, result: null, error }))
        return null
      }
    },
    [client],
  )
  return { send, sending: state.inFlight > 0, result: state.result, error: state.error }
}
