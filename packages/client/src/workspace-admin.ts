import {
  ClientAddWorkspaceMemberDocument,
  ClientAgentProfilesDocument,
  ClientCreateTaskDocument,
  ClientCreateUserDocument,
  ClientCreateWorkspaceDocument,
  ClientDeactivateUserDocument,
  ClientRemoveWorkspaceMemberDocument,
  ClientRotateUserTokenDocument,
  ClientUsersDocument,
  ClientWorkspaceMembersDocument,
  type ClientCreateTaskMutation,
  type TaskRepositoryInput,
  type UserFieldsFragment,
  type WorkspaceMembersFieldsFragment,
} from './generated/graphql.js'
import { TaskClientError } from './errors.js'
import type { Requests } from './requests.js'

/** A user as the admin's list and a workspace's members show it (`active` is false once deactivated). */
export type User = UserFieldsFragment

/** A workspace with the users who may read and act in it. */
export type WorkspaceMembers = WorkspaceMembersFieldsFragment

/** What createUser and rotateUserToken return: the token is shown once and never readable again. */
export interface IssuedToken {
  user: User
  token: string
}

/** A repository of a new task: its name (owner/name for GitHub), and optionally its checkout and branches. */
export type NewTaskRepository = TaskRepositoryInput

export interface NewTask {
  workspaceId: string
  title: string
  description?: string
  repositories?: NewTaskRepository[]
}

/** The created task (its row reaches the summary store through the workspace feed). */
export type CreatedTask = ClientCreateTaskMutation['createTask']

/** A profile startSession may launch (names only: the server never sends a command). */
export interface AgentProfile {
  name: string
}

/**
 * Setting up and administering, as one-shot calls (the stores are not involved): workspaces, tasks,
 * agent profiles, users and members. Mutations are sent once; a refusal is a TaskClientError with
 * the server's code (BAD_USER_INPUT, FORBIDDEN, NOT_FOUND, CONFLICT), and an unconfirmed one is
 * UNCERTAIN. The TaskClient is built on this class, so each is a method of the client.
 */
export abstract class WorkspaceAdminOperations {
  protected abstract readonly requests: Requests

  /** A workspace with the default workflow; the caller becomes its member. */
  async createWorkspace(name: string): Promise<{ id: string; name: string }> {
    return (await this.requests.mutate(ClientCreateWorkspaceDocument, { name })).createWorkspace
  }

  /** A task in the workspace's first step; a repository's localPath must lie inside the server's REPOSITORY_ROOTS. */
  async createTask(task: NewTask): Promise<CreatedTask> {
    const { workspaceId, title, description, repositories } = task
    const input = { workspaceId, title, ...(description !== undefined && { description }), ...(repositories !== undefined && { repositories }) }
    return (await this.requests.mutate(ClientCreateTaskDocument, { input })).createTask
  }

  /** The profiles this server can start (startSession's `agentProfile`). */
  async agentProfiles(): Promise<AgentProfile[]> {
    return (await this.requests.query(ClientAgentProfilesDocument, {})).agentProfiles
  }

  /** The workspace and its members (FORBIDDEN unless the caller is a member). */
  async workspaceMembers(workspaceId: string): Promise<WorkspaceMembers> {
    return (await this.requests.query(ClientWorkspaceMembersDocument, { workspaceId })).boot.workspace
  }

  /** The admin, or a member of the workspace. */
  async addWorkspaceMember(workspaceId: string, userId: string): Promise<WorkspaceMembers> {
    return (await this.requests.mutate(ClientAddWorkspaceMemberDocument, { workspaceId, userId })).addWorkspaceMember
  }

  /** The admin, or a member of the workspace: the removed user's subscriptions there end at once. */
  async removeWorkspaceMember(workspaceId: string, userId: string): Promise<WorkspaceMembers> {
    return (await this.requests.mutate(ClientRemoveWorkspaceMemberDocument, { workspaceId, userId })).removeWorkspaceMember
  }

  /** Every user, deactivated ones included. Admin only: FORBIDDEN otherwise. */
  async users(): Promise<User[]> {
    return (await this.requests.query(ClientUsersDocument, {})).users
  }

  /**
   * Whether the caller holds the admin token. The schema tells only by refusing: `users` is
   * FORBIDDEN to everyone else. Any other failure is thrown.
   */
  async isAdmin(): Promise<boolean> {
    try {
      await this.users()
      return true
    } catch (error) {
      if (error instanceof TaskClientError && error.code === 'FORBIDDEN') return false
      throw error
    }
  }

  /** Admin only. The token is in the answer alone: show it once, keep it nowhere. */
  async createUser(name: string): Promise<IssuedToken> {
    return (await this.requests.mutate(ClientCreateUserDocument, { name })).createUser
  }

  /** The admin, or the user itself: a new token (shown once); every earlier one stops working at once. */
  async rotateUserToken(userId: string): Promise<IssuedToken> {
    return (await this.requests.mutate(ClientRotateUserTokenDocument, { userId })).rotateUserToken
  }

  /** Admin only: none of the user's tokens works any more; its open sockets are closed. */
  async deactivateUser(userId: string): Promise<User> {
    return (await this.requests.mutate(ClientDeactivateUserDocument, { userId })).deactivateUser
  }
}

/** The public methods above, as the TaskClient interface lists them. */
export type WorkspaceAdmin = { [K in keyof WorkspaceAdminOperations]: WorkspaceAdminOperations[K] }
