import type { Plugin } from 'graphql-yoga'
import { clientError, forbidden } from '../../errors.ts'
import type { AccessEnd } from '../../access/access-control.ts'
import type { Context } from '../../schema/context.ts'
import { endable, isAsyncIterable } from '../../util/async-iterators.ts'

/**
 * Subscriptions over HTTP (server-sent events) end when the access that allowed them ends, as
 * WebSocket ones do (the gateway holds those itself): a revoked token or deactivated user ends the
 * stream with UNAUTHENTICATED, a removed membership with FORBIDDEN, on every instance.
 */
export function useAccessEnforcement(): Plugin<Context> {
  return {
    onSubscribe({ args }) {
      const ctx = args.contextValue as Context
      if (ctx.connection) return
      const workspaces: string[] = []
      ctx.onWorkspaceScope = (workspaceId) => workspaces.push(workspaceId)
      const since = ctx.access.generation
      return {
        onSubscribeResult({ result, setResult }) {
          const principal = ctx.principal
          if (!principal || !isAsyncIterable(result)) return
          const { userId, tokenHash } = principal
          const releases: (() => void)[] = []
          setResult(
            endable(result, (end) => {
              const endWith = (why: AccessEnd) =>
                end(why === 'membership' ? forbidden('this workspace') : clientError('UNAUTHENTICATED', 'Your token no longer authenticates.'))
              releases.push(ctx.access.hold({ userId, tokenHash, end: endWith }, since))
              for (const workspaceId of workspaces) releases.push(ctx.access.hold({ userId, tokenHash, workspaceId, end: endWith }, since))
              return () => releases.forEach((release) => release())
            }),
          )
        },
      }
    },
  }
}
