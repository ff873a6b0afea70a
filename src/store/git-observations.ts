// Git observations: the latest state of each repository as a session's working copy shows it.
import type { Store } from './store.ts'
import type { GitObservation } from '../summary/inputs.ts'
import { emit } from './events.ts'

export type GitObservationInput = Omit<GitObservation, 'observedAt'> & { observedAt?: Date }

/** The latest observation per session + repository (a keyed upsert: siblings are untouched). */
export async function recordGitObservation(store: Store, o: GitObservationInput) {
  const repository = await store.db.taskRepository.findUniqueOrThrow({ where: { id: o.taskRepositoryId } })
  const data = { ...o, taskId: repository.taskId, observedAt: o.observedAt ?? store.now() }
  const row = await store.db.gitObservation.upsert({
    where: { sessionId_taskRepositoryId: { sessionId: o.sessionId, taskRepositoryId: o.taskRepositoryId } },
    create: data,
    update: data,
  })
  await emit(store, 'git.observed', repository.taskId, o.sessionId)
  return row
}
