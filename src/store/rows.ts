// Row types of the authoritative records, for the layers above the store.
export type {
  User as UserRow,
  Workspace as WorkspaceRow,
  WorkflowStep as WorkflowStepRow,
  Task as TaskRow,
  TaskRepository as TaskRepositoryRow,
  Session as SessionRow,
  Turn as TurnRow,
  Message as MessageRow,
  GitObservation as GitObservationRow,
  PullRequestObservation as PullRequestRow,
  TaskStatusSummary as TaskStatusSummaryRow,
} from '../generated/sqlite/client.ts'
