import { useCallback, useEffect, useState } from 'react'
import type { TaskClient, User, WorkspaceMembers } from '@task-status/client'
import { useAction } from './use-action.ts'

/**
 * What the Workspace panel shows: the viewer's id, whether it holds the admin token (the schema
 * tells only by refusing `users` with FORBIDDEN), every user when it does, and the workspace's
 * members. Read when the panel opens; each answer of a change replaces what it changed.
 */
export function useDirectory(client: TaskClient, workspaceId: string) {
  const [viewerId, setViewerId] = useState<string | null>(null)
  const [admin, setAdmin] = useState(false)
  const [users, setUsers] = useState<User[]>([])
  const [workspace, setWorkspace] = useState<WorkspaceMembers | null>(null)
  const { error, run } = useAction()

  useEffect(() => {
    let live = true
    void run(async () => {
      const [viewer, isAdmin, members] = await Promise.all([client.viewer(), client.isAdmin(), client.workspaceMembers(workspaceId)])
      const everyone = isAdmin ? await client.users() : []
      if (!live) return
      setViewerId(viewer.user.id)
      setAdmin(isAdmin)
      setUsers(everyone)
      setWorkspace(members)
    })
    return () => {
      live = false
    }
  }, [client, workspaceId, run])

  const upsertUser = useCallback((user: User) => {
    setUsers((all) => (all.some((u) => u.id === user.id) ? all.map((u) => (u.id === user.id ? user : u)) : [...all, user]))
    // A member's name or state shown in the members list follows too.
    setWorkspace((w) => w && { ...w, members: w.members.map((m) => (m.id === user.id ? user : m)) })
  }, [])

  return { viewerId, admin, users, workspace, setWorkspace, upsertUser, error }
}
