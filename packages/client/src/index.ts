/**
 * The typed client SDK of the task status server, for browsers and Node: one graphql-ws socket,
 * zustand/vanilla stores for the task switcher (summaries), the visible sessions and the
 * connection. It imports nothing from the server: only graphql-ws, zustand, immer and graphql.
 */
export { createTaskClient, SEND_ROUNDS, type TaskClient, type TaskClientOptions } from './task-client.js'
export { TaskClientError } from './errors.js'
export { compareTasks, sortTasks, TASK_ORDERS, type TaskOrder } from './task-order.js'
export type { WsClient, WsClientFactory } from './transport.js'
export type { AgentProfile, CreatedTask, IssuedToken, NewTask, NewTaskRepository, User, WorkspaceAdmin, WorkspaceMembers } from './workspace-admin.js'
export type {
  ClientDiagnostic,
  ConnectionState,
  Message,
  MessageAppend,
  MessageUpdate,
  SendResult,
  SessionEntry,
  SessionInfo,
  SessionsState,
  StatusSummary,
  StreamedMessage,
  SummaryState,
  TaskRow,
  Viewer,
} from './types.js'
export type {
  ForegroundActivity,
  MessageAuthor,
  MessageKind,
  PendingAction,
  PullRequestAggregateState,
  RecoveryAction,
  SessionState,
} from './generated/graphql.js'
