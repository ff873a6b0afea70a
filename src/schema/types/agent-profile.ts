import { builder } from '../builder.ts'
import { requirePrincipal } from '../authorize.ts'

/** Only the name: a profile's command and environment stay in the server's configuration. */
const AgentProfileRef = builder.objectRef<{ name: string }>('AgentProfile').implement({
  description: '(v1.3)',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'The name startSession takes as agentProfile.' }),
  }),
})

builder.queryField('agentProfiles', (t) =>
  t.field({
    type: [AgentProfileRef],
    description: '(v1.3) The agent profiles this server can start (names only: never a command or environment).',
    resolve: (_root, _args, ctx) => {
      requirePrincipal(ctx)
      return ctx.agentProfiles.map((name) => ({ name }))
    },
  }),
)
