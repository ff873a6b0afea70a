import type { Store } from './store.ts'

/** A new workspace's board. Done is terminal: moving a task there completes its sessions. */
export const DEFAULT_WORKFLOW = [
  { name: 'Backlog', terminal: false },
  { name: 'In progress', terminal: false },
  { name: 'Review', terminal: false },
  { name: 'Done', terminal: true },
] as const

export async function createWorkspace({ db }: Store, name: string, creatorUserId: string) {
  return db.workspace.create({
    data: {
      name,
      members: { create: { userId: creatorUserId, role: 'owner' } },
      steps: { create: DEFAULT_WORKFLOW.map((step, position) => ({ ...step, position })) },
    },
  })
}

export async function addMember({ db }: Store, workspaceId: string, userId: string) {
  await db.membership.upsert({
    where: { workspaceId_userId: { workspaceId, userId } },
    create: { workspaceId, userId },
    update: {},
  })
}

/** Removes the membership; true when there was one. */
export async function removeMember({ db }: Store, workspaceId: string, userId: string): Promise<boolean> {
  const { count } = await db.membership.deleteMany({ where: { workspaceId, userId } })
  return count > 0
}

/** The members of each workspace, oldest membership first. */
export async function membersOfWorkspaces({ db }: Store, workspaceIds: readonly string[]) {
  const rows = await db.membership.findMany({
    where: { workspaceId: { in: [...workspaceIds] } },
    orderBy: [{ createdAt: 'asc' }, { userId: 'asc' }],
    select: { workspaceId: true, user: true },
  })
  return rows
}

export function findWorkspaces({ db }: Store, ids: readonly string[]) {
  return db.workspace.findMany({ where: { id: { in: [...ids] } } })
}

/** Of the given workspaces, those the user is a member of. */
export async function memberWorkspaceIds({ db }: Store, userId: string, workspaceIds: readonly string[]) {
  const rows = await db.membership.findMany({
    where: { userId, workspaceId: { in: [...workspaceIds] } },
    select: { workspaceId: true },
  })
  return new Set(rows.map((r) => r.workspaceId))
}

export function workspacesOfUser({ db }: Store, userId: string) {
  return db.workspace.findMany({
    where: { members: { some: { userId } } },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  })
}

export function stepsOfWorkspaces({ db }: Store, workspaceIds: readonly string[]) {
  return db.workflowStep.findMany({
    where: { workspaceId: { in: [...workspaceIds] } },
    orderBy: [{ workspaceId: 'asc' }, { position: 'asc' }],
  })
}

export function findSteps({ db }: Store, ids: readonly string[]) {
  return db.workflowStep.findMany({ where: { id: { in: [...ids] } } })
}
