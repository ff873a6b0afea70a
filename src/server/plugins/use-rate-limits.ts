import { Redis } from 'ioredis'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible'
import { GraphQLError, Kind, getOperationAST, type DocumentNode, type SelectionSetNode } from 'graphql'
import type { Plugin } from 'graphql-yoga'
import type { Logger } from '../../observability/logger.ts'
import type { Context } from '../../schema/context.ts'

export interface RateLimitSettings {
  /** Root mutation fields a caller may run per window; 0 turns the limit off. */
  mutations: number
  /** Subscriptions a caller may start per window; 0 turns the limit off. */
  subscriptions: number
  windowSeconds: number
  /** Set: the budget lives in Redis, shared by every instance using it. */
  redisUrl?: string
}

export type RateLimitedKind = 'mutation' | 'subscription'

export interface RateLimits {
  /** Takes `points` from the caller's budget; a refusal is the RATE_LIMITED error to answer with. */
  take(kind: RateLimitedKind, callerId: string, points: number): Promise<GraphQLError | undefined>
  close(): Promise<void>
}

const KEY_PREFIX = 'tss:rate:'

/**
 * Per-caller budgets (keyed by user id, never by token) for mutations and subscription starts,
 * with rate-limiter-flexible: fixed windows in memory, or in Redis so several instances share one
 * budget. Should Redis be unreachable, each instance falls back to its own in-memory budget rather
 * than refusing every caller or letting everything through.
 */
export function createRateLimits(settings: RateLimitSettings, logger: Logger): RateLimits {
  const redis = settings.redisUrl
    ? new Redis(settings.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
    : undefined
  // The URL may carry a password, so only the error is logged.
  redis?.on('error', (error: Error) => logger.warn({ err: error, action: 'rate-limit.redis' }, 'rate limit redis connection error'))

  const limiter = (kind: RateLimitedKind, points: number): RateLimiterAbstract | undefined => {
    if (points <= 0) return undefined
    const options = { keyPrefix: `${KEY_PREFIX}${kind}`, points, duration: settings.windowSeconds }
    const memory = new RateLimiterMemory(options)
    return redis ? new RateLimiterRedis({ ...options, storeClient: redis, rejectIfRedisNotReady: true, insuranceLimiter: memory }) : memory
  }
  const limiters: Record<RateLimitedKind, RateLimiterAbstract | undefined> = {
    mutation: limiter('mutation', settings.mutations),
    subscription: limiter('subscription', settings.subscriptions),
  }

  return {
    async take(kind, callerId, points) {
      const limiter = limiters[kind]
      if (!limiter) return undefined
      try {
        await limiter.consume(callerId, points)
        return undefined
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection
        const retryAfterMs = Math.max(1, Math.ceil(rejection.msBeforeNext))
        logger.debug({ action: 'rate-limited', kind, userId: callerId, retryAfterMs }, 'rate limit reached')
        const what = kind === 'mutation' ? `${limiter.points} mutations` : `${limiter.points} subscription starts`
        return new GraphQLError(`Rate limit of ${what} per ${settings.windowSeconds} s reached; retry in ${retryAfterMs} ms.`, {
          extensions: { code: 'RATE_LIMITED', retryAfterMs },
        })
      }
    },
    async close() {
      if (redis) await redis.quit().catch(() => redis.disconnect())
    },
  }
}

/** Root fields of the selection, through fragments: `{ a: addMessage … b: addMessage … }` is two mutations. */
function rootFieldCount(document: DocumentNode, selectionSet: SelectionSetNode, seen = new Set<string>()): number {
  let count = 0
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) count += selection.name.value === '__typename' ? 0 : 1
    else if (selection.kind === Kind.INLINE_FRAGMENT) count += rootFieldCount(document, selection.selectionSet, seen)
    else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value)
      const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value)
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION) count += rootFieldCount(document, fragment.selectionSet, seen)
    }
  }
  return count
}

/**
 * Takes from the caller's budget right before a mutation executes or a subscription starts, on both
 * transports, so a refused operation runs no resolver. Anonymous operations are not counted: every
 * mutation and subscription refuses them anyway (UNAUTHENTICATED), and over WebSocket they never
 * get past connection_init.
 */
export function rateLimitPlugin(limits: RateLimits): Plugin<Context> {
  const refusal = async (
    kind: RateLimitedKind,
    args: { document: DocumentNode; operationName?: string | null; contextValue: Context },
  ): Promise<GraphQLError | undefined> => {
    const principal = args.contextValue.principal
    // A cohort's shared live execution, started beside a resumed member's own (counted) subscription.
    if (!principal || args.contextValue.feedTap?.shared) return undefined
    const operation = getOperationAST(args.document, args.operationName)
    if (operation?.operation !== kind) return undefined
    const points = kind === 'mutation' ? rootFieldCount(args.document, operation.selectionSet) : 1
    if (points === 0) return undefined
    const error = await limits.take(kind, principal.userId, points)
    if (!error || args.contextValue.connectionId) return error
    // Over HTTP also as a status and header that proxies and generic clients understand.
    const retryAfter = String(Math.ceil(Number(error.extensions.retryAfterMs) / 1000))
    return new GraphQLError(error.message, {
      extensions: { ...error.extensions, http: { status: 429, headers: { 'Retry-After': retryAfter } } },
    })
  }
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      const error = await refusal('mutation', args)
      if (error) setResultAndStopExecution({ errors: [error] })
    },
    async onSubscribe({ args, setResultAndStopExecution }) {
      const error = await refusal('subscription', args)
      if (error) setResultAndStopExecution({ errors: [error] })
    },
  }
}
