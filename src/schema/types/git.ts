import { builder } from '../builder.ts'
import { requirePrincipal } from '../authorize.ts'
import { notImplemented } from '../../errors.ts'
import type { GitObservationRow } from '../../store/rows.ts'

type ObservationWithRepository = GitObservationRow & { repository: { name: string } }

export const RepositoryGitStatusRef = builder.objectRef<ObservationWithRepository>('RepositoryGitStatus').implement({
  fields: (t) => ({
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
    resolve: (_root, _args, ctx) => {
      requirePrincipal(ctx)
      throw notImplemented('Mutation.refreshSessionGit')
    },
  }),
)
