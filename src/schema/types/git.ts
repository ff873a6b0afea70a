import { builder } from '../builder.ts'
import { notFound } from '../../errors.ts'
import { requireReadableSession } from '../authorize.ts'
import { sessionOperation } from '../session-operation.ts'
import type { GitObservationRow } from '../../store/rows.ts'

type ObservationWithRepository = GitObservationRow & { repository: { name: string } }

export const RepositoryGitStatusRef = builder.objectRef<ObservationWithRepository>('RepositoryGitStatus').implement({
  fields: (t) => ({
    id: t.id({
      description: 'Stable per session and repository: a newer observation replaces the previous one under the same id.',
      // Stable across observations, so a refreshSessionGit result or a SessionGitUpdated event
      // updates the entries a normalized cache already holds under Session.git.
      resolve: (g) => `${g.sessionId}:${g.taskRepositoryId}`,
    }),
    taskRepositoryId: t.exposeID('taskRepositoryId'),
    repository: t.string({ resolve: (g) => g.repository.name }),
    additions: t.exposeInt('additions'),
    deletions: t.exposeInt('deletions'),
    changedFiles: t.exposeInt('changedFiles'),
    ahead: t.exposeInt('ahead'),
    behind: t.exposeInt('behind'),
    comparisonUnavailable: t.exposeBoolean('comparisonUnavailable'),
    observedAt: t.expose('observedAt', { type: 'DateTime' }),
  }),
})

builder.mutationField('refreshSessionGit', (t) =>
  t.field({
    type: [RepositoryGitStatusRef],
    description: 'Requests a fresh Git observation for the session. Changes neither focus nor subscription membership.',
    args: { sessionId: t.arg.id({ required: true }) },
    resolve: async (_root, { sessionId }, ctx) => {
      const session = await requireReadableSession(ctx, sessionId)
      if (!session) throw notFound('Session', sessionId)
      return sessionOperation(() => ctx.sessions.refreshSessionGit(sessionId))
    },
  }),
)
