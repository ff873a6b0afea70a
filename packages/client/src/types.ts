import type {
  ClientSessionEventsSubscription,
  ClientViewerQuery,
  ClientWorkspaceEventsSubscription,
  PermissionOptionFieldsFragment,
  PlanEntryFieldsFragment,
  SessionFieldsFragment,
  StatusSummaryFieldsFragment,
  StreamedMessageFieldsFragment,
  TaskRowFieldsFragment,
  ToolCallDetailFieldsFragment,
  TranscriptMessageFieldsFragment,
} from './generated/graphql.js'

/** Every field of a task's bounded status summary (TaskStatusSummary), as the feed and the reads send it. */
export type StatusSummary = StatusSummaryFieldsFragment

/** One row of the task switcher. `summary` is null only while the server never derived one. */
export type TaskRow = Pick<TaskRowFieldsFragment, 'id' | 'title' | 'workflowStepId' | 'createdAt' | 'updatedAt'> & { summary: StatusSummary | null }

/** A transcript entry of a session (the whole message: `content` is always complete). */
export type Message = TranscriptMessageFieldsFragment

/**
 * A message as a MessageUpdated carries it: every field but `content`, `permissionOptions` and
 * `toolCall` (those change with a null append, and the SDK then reads the message whole).
 */
export type StreamedMessage = StreamedMessageFieldsFragment

/** (v1.4) One option of a PERMISSION_REQUEST (`Message.permissionOptions`, the agent's order): pass its `id` to respondToPermission. */
export type PermissionOption = PermissionOptionFieldsFragment

/** (v1.4) What a TOOL_CALL does, or what a PERMISSION_REQUEST asks to allow (`Message.toolCall`). `rawInput` is JSON text (not JSON once `truncated`). */
export type ToolCallDetail = ToolCallDetailFieldsFragment
export type ToolCallDiff = ToolCallDetail['diffs'][number]
export type ToolCallLocation = ToolCallDetail['locations'][number]

/** (v1.4) One entry of the agent's plan (`SessionInfo.plan`, replaced whole on each SessionStateChanged). */
export type PlanEntry = PlanEntryFieldsFragment

/** Text a MessageUpdated appended at `offset` (UTF-16 code units), at most 16 KiB of it per frame. */
export interface MessageAppend {
  offset: number
  text: string
}

/** One MessageUpdated: the message's other fields, and its append (null: a gap, read the message). */
export interface MessageUpdate {
  message: StreamedMessage
  append: MessageAppend | null
}

/** A message whose MessageUpdated could not be applied to the copy held: read it whole (up to `version` at least). */
export interface MessageGap {
  sessionId: string
  messageId: string
  version: number
}

/** What the detail pane shows about a session (state, error, models, Git, and since v1.4 the plan and `currentModeId`). */
export type SessionInfo = SessionFieldsFragment

export type Viewer = ClientViewerQuery['viewer']

export interface SummaryState {
  workspaceId: string | null
  /** By task id. Key order is insertion order; sort for display (newest activity first). */
  tasks: Record<string, TaskRow>
  /** The last workspace-feed position applied (boot.feedCursor, then each event's cursor). Opaque. */
  cursor: string | null
  status: 'idle' | 'booting' | 'live' | 'resyncing'
  /** How many WorkspaceResync events were handled (each refetched boot). */
  resyncs: number
}

export interface SessionEntry {
  /** Null until the first snapshot (or refetch) arrives. */
  session: SessionInfo | null
  /** Transcript order: first arrival of each id (snapshot order, then additions). */
  messageIds: string[]
  messages: Record<string, Message>
  /** True once a SessionJoined snapshot arrived on the current connection; false again while reconnecting. */
  joined: boolean
}

export interface SessionsState {
  /** Only the sessions currently in the visible set (setVisibleSessions). */
  byId: Record<string, SessionEntry>
}

export interface ConnectionState {
  status: 'connecting' | 'connected' | 'reconnecting' | 'closed'
  /** Close code of the last socket that closed (1006 abnormal, 1013 overload, 4403 bad token, ...). */
  lastCloseCode?: number
  /** Successful reconnections after a drop. */
  reconnects: number
}

export type SendResult = { outcome: 'accepted' | 'replayed'; message: Message } | { outcome: 'unknown'; clientMessageId: string }

/** Optional diagnostics hook: connection lifecycle, resyncs and subscription failures. */
export type ClientDiagnostic =
  | { type: 'connected'; reconnect: boolean }
  | { type: 'closed'; code: number | undefined; reason: string | undefined; willRetry: boolean }
  | { type: 'reconnecting'; attempt: number; delayMs: number }
  | { type: 'resync'; scope: 'workspace'; workspaceId: string; reason: string }
  | { type: 'resync'; scope: 'session'; sessionId: string; reason: string }
  | { type: 'subscription-error'; operation: 'workspaceEvents' | 'sessionEvents'; id: string; code: string | undefined; message: string }

export type FeedEvent = ClientWorkspaceEventsSubscription['workspaceEvents']
export type SessionEvent = ClientSessionEventsSubscription['sessionEvents']

/** A row as the reads (boot, tasks, task) and TaskUpserted send it. */
export type TaskRowPayload = TaskRowFieldsFragment

export function toRow(payload: TaskRowPayload): TaskRow {
  return { id: payload.id, title: payload.title, workflowStepId: payload.workflowStepId, createdAt: payload.createdAt, updatedAt: payload.updatedAt, summary: payload.statusSummary }
}
