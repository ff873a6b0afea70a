/**
 * The typed client SDK of the task status server, for browsers and Node: one graphql-ws socket,
 * zustand/vanilla stores for the task switcher (summaries), the visible sessions and the
 * connection. It imports nothing from the server: only graphql-ws, zustand, immer and graphql.
 */
export { createTaskClient, SEND_ROUNDS, type TaskClient, type TaskClientOptions } from './task-client.js'
export { TaskClientError } from './errors.js'
export { compareTasks, sortTasks, TASK_ORDERS, type TaskOrder } from './task-order.js'
export { isRejectOption, toolCallCommand } from './tool-call.js'
export type { WsClient, WsClientFactory } from './transport.js'
export type { AgentProfile, CreatedTask, IssuedToken, NewTask, NewTaskRepository, User, WorkspaceAdmin, WorkspaceMembers } from './workspace-admin.js'
export type {
  ClientDiagnostic,
  ConnectionState,
  Message,
  MessageAppend,
  MessageUpdate,
  PermissionOption,
  PlanEntry,
  SendResult,
  SessionEntry,
  SessionInfo,
  SessionsState,
  StatusSummary,
  StreamedMessage,
  SummaryState,
  TaskRow,
  ToolCallDetail,
  ToolCallDiff,
  ToolCallLocation,
  Viewer,
} from './types.js'
export type {
  ForegroundActivity,
  MessageAuthor,
  MessageKind,
  PendingAction,
  PermissionOptionKind,
  PlanEntryPriority,
  PlanEntryStatus,
  PullRequestAggregateState,
  RecoveryAction,
  SessionState,
} from './generated/graphql.js'
