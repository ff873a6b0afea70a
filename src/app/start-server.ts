import { createServer, type RequestListener, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Config } from '../config/config.ts'
import { chooseLogFormat, createLogger, type Logger } from '../observability/logger.ts'
import { createMetrics } from '../observability/metrics.ts'
import { startTracing, type TracingHandle } from '../observability/tracing.ts'
import { createStore, type Clock, type Store } from '../store/store.ts'
import { bootstrapAdmin, principalForTokenHash } from '../store/users.ts'
import { memberWorkspaceIds } from '../store/workspaces.ts'
import { ensureFeedEpoch } from '../store/feed.ts'
import { AccessControl } from '../access/access-control.ts'
import { hashToken } from '../auth/tokens.ts'
import { createMemoryPubSub } from '../pubsub/memory.ts'
import { createRedisPubSub } from '../pubsub/redis.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import { startTaskFeed } from '../feed/task-feed.ts'
import { createFeedMetrics } from '../feed/feed-metrics.ts'
import { startTombstoneRetention } from '../feed/tombstone-retention.ts'
import { Projector } from '../projector/projector.ts'
import { recoverAfterRestart } from '../recovery/startup-recovery.ts'
import type { SessionService } from '../agents/session-service.ts'
import type { GitMonitor } from '../git/monitor.ts'
import { newInstanceId, type InstanceLease } from '../instances/instance-lease.ts'
import type { SessionCommands } from '../instances/session-commands.ts'
import type { Scheduler } from '../util/scheduler.ts'
import type { SchedulerLimits } from '../outbound/outbound-scheduler.ts'
import { attachDeliveryGateway } from '../delivery/ws-gateway.ts'
import { createYogaServer } from '../server/yoga.ts'
import { createRateLimits } from '../server/plugins/use-rate-limits.ts'
import { corsPolicy } from '../server/cors.ts'
import { withAccessLog } from '../server/plugins/use-access-log.ts'
import { Readiness } from '../server/readiness.ts'
import { DatabaseHealth } from '../server/database-health.ts'
import { runPreflight, type PreflightOptions } from '../server/preflight.ts'
import { healthOnly, routeRequests } from './request-routing.ts'
import { startSessionOwnership } from './session-ownership.ts'
import { openDatabase } from './open-database.ts'

export interface StartOptions {
  logger?: Logger
  clock?: Clock
  /** Skip `prisma migrate deploy` (tests that start from an already migrated database). */
  skipMigrations?: boolean
  /** Called with a generated admin token on first start; defaults to printing it once on stderr. */
  onAdminTokenGenerated?: (token: string) => void
  /** Sees every SQL statement (tests prove read paths do not grow with the number of tasks). */
  onQuery?: (sql: string) => void
  /** Timers of the stream coalescer (tests inject fake time). */
  scheduler?: Scheduler
  /** Outbound queue limits per WebSocket connection (MAPPING.md defaults otherwise). */
  deliveryLimits?: SchedulerLimits
  /** Subscription cohorts for the workspace feed (on unless false; benchmarks compare both). */
  multiplexSubscriptions?: boolean
  /** Timeouts of the start-up checks (tests shorten them). */
  preflight?: PreflightOptions
  /** WebSocket keepalive and graphql-ws's connection_init wait (tests inject timers or shorten them). */
  /** Where the built page is (default dist/web; tests build it into a temporary folder). */
  webRoot?: string
  websocket?: Pick<Parameters<typeof attachDeliveryGateway>[0], 'keepalive' | 'connectionInitWaitTimeoutMs'>
}

export interface RunningServer {
  url: string
  port: number
  store: Store
  pubsub: PubSub
  access: AccessControl
  projector: Projector
  /** This instance's agents (the sessions it owns). */
  sessions: SessionService
  /** Every session command, carried out here or by the session's owner. */
  commands: SessionCommands
  instanceId: string
  lease: InstanceLease
  git: GitMonitor
  gateway: ReturnType<typeof attachDeliveryGateway>
  readiness: Readiness
  /** Whether the database can be reached (/readyz 503 while not). */
  database: DatabaseHealth
  logger: Logger
  httpServer: HttpServer
  /** This process's span export (a no-op when tracing is off). */
  tracing: TracingHandle
  close(): Promise<void>
}

function printAdminTokenOnce(token: string): void {
  process.stderr.write(
    `\n  Admin token (shown once; only its hash is stored):\n\n    ${token}\n\n` +
      `  Use it as: Authorization: Bearer <token>\n\n`,
  )
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const instanceId = newInstanceId()
  const logFormat = chooseLogFormat({ stdoutIsTTY: process.stdout.isTTY === true, nodeEnv: config.nodeEnv, setting: config.logFormat })
  const logger = (options.logger ?? createLogger(config.logLevel, logFormat)).child({ instance: instanceId })
  const readiness = new Readiness()
  const metrics = createMetrics()
  // Before anything that publishes or serves: the hot paths read tracing.on as they run.
  const tracer = await startTracing(config.tracing, instanceId, logger)

  // Bound before anything else, so a port clash ends the start before a file is created or a token printed;
  // until the server is assembled every request but /healthz is refused as not ready.
  let serve: RequestListener = healthOnly
  // CORS before any route, in every phase (starting, serving, stopping): one policy for every path.
  const cors = corsPolicy(config.corsOrigins)
  // Every answer in every phase too: a refused request is logged (use-access-log.ts).
  const httpServer = createServer(withAccessLog(logger, (req, res) => cors.handle(req, res) || serve(req, res)))
  const preflight = await runPreflight(config, httpServer, options.preflight)

  let db
  try {
    db = await openDatabase(config, logger, options)
  } catch (error) {
    await new Promise<void>((resolve) => httpServer.close(() => resolve()))
    await preflight.release()
    throw error
  }
  const store = createStore(db, options.clock)
  const database = new DatabaseHealth(db)

  const admin = await bootstrapAdmin(db, config.adminToken)
  if (admin.generatedToken) (options.onAdminTokenGenerated ?? printAdminTokenOnce)(admin.generatedToken)
  if (admin.revokedTokens)
    logger.warn({ revokedTokens: admin.revokedTokens }, 'admin token from ADMIN_TOKEN replaces the earlier admin token; the old one is revoked')

  const pubsub = config.redisUrl ? createRedisPubSub(config.redisUrl, logger) : createMemoryPubSub()
  const access = new AccessControl({
    pubsub,
    logger,
    lookup: (tokenHash) => principalForTokenHash(db, tokenHash),
    isMember: async (userId, workspaceId) => (await memberWorkspaceIds(store, userId, [workspaceId])).has(workspaceId),
  })
  access.start()
  // ADMIN_TOKEN replaced earlier admin tokens: sockets other instances opened with one close (a rotation).
  if (config.adminToken && admin.revokedTokens)
    await access.publish({ type: 'credentials-revoked', userId: admin.adminUserId, keepTokenHash: hashToken(config.adminToken) })
  const stopTaskFeed = startTaskFeed(store.events, pubsub, logger)
  const feedMetrics = createFeedMetrics(metrics.registry)
  const feed = { store, pubsub, logger, metrics: feedMetrics, epoch: await ensureFeedEpoch(store) }
  const stopTombstoneRetention = startTombstoneRetention({ store, retentionMs: config.feedRetentionMs, logger, metrics: feedMetrics })
  const clock = options.clock
  // Tests that drive time drive the projector's check interval with it.
  const projector = new Projector({ store, pubsub, logger, metrics, ...(clock && { now: () => clock().getTime() }) })
  projector.start()

  const { profiles, watchdog, sessions, git, lease, bus, commands, recovery } = await startSessionOwnership(config, {
    store,
    pubsub,
    logger,
    metrics,
    instanceId,
    scheduler: options.scheduler,
  })

  const rateLimits = createRateLimits({ ...config.rateLimits, redisUrl: config.redisUrl }, logger)
  // Names only: a profile's command and environment never leave the configuration.
  const agentProfileNames = [...profiles.keys()].sort()
  const yoga = createYogaServer({ store, pubsub, access, logger, metrics, projector, sessions: commands, git, repositoryRoots: config.repositoryRoots, feed, agentProfiles: agentProfileNames, rateLimits, database })
  serve = routeRequests({ config, store, logger, metrics, readiness, database, yoga, webRoot: options.webRoot })
  // Longer than the usual proxy/client idle timeouts, so an idle keep-alive socket is not closed under a client's request.
  httpServer.keepAliveTimeout = 65_000
  httpServer.headersTimeout = 66_000
  const websocket = attachDeliveryGateway({ httpServer, yoga, access, logger, metrics, limits: options.deliveryLimits, maxSubscriptionsPerConnection: config.maxSubscriptionsPerConnection, multiplex: options.multiplexSubscriptions, onConnectionClosed: (id) => commands.unfocus(id), acceptingConnections: () => readiness.ready, ...options.websocket })

  const port = (httpServer.address() as AddressInfo).port
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  const url = `http://${host}:${port}`
  logger.info({ url: `${url}/graphql`, port, provider: config.databaseProvider }, 'server listening')
  // Serving starts at once (liveness); readiness waits for recovery and converged summaries.
  await recoverAfterRestart({
    ...recovery,
    projector,
    instanceId,
    // The SQLite lock makes this the file's only server: whatever is open there, a dead process left.
    exclusive: config.databaseProvider === 'sqlite',
  })
  readiness.markReady()

  let closing: Promise<void> | undefined
  const close = () =>
    (closing ??= (async () => {
      readiness.hold('shutdown')
      logger.info('shutting down')
      const stopped = new Promise<void>((resolve) => httpServer.close(() => resolve()))
      await websocket.close()
      httpServer.closeAllConnections()
      await stopped
      // Agents: pending stream content is written, then every child process ends.
      await git.stop()
      // No more forwarded commands (they would relaunch agents), then the agents end, then the
      // lease: other instances take the sessions over at once instead of waiting for it to lapse.
      await bus.close()
      await sessions.shutdown()
      watchdog.close()
      await lease.release().catch((error: unknown) => logger.warn({ err: error }, 'lease release failed; it lapses by itself'))
      stopTaskFeed()
      await access.stop()
      stopTombstoneRetention()
      projector.stop()
      await projector.idle()
      await yoga.dispose()
      await rateLimits.close()
      await pubsub.close()
      await db.$disconnect()
      await preflight.release()
      await tracer.close()
      logger.info('shut down')
    })())

  return { url, port, store, pubsub, access, projector, sessions, commands, instanceId, lease, git, readiness, database, logger, httpServer, gateway: websocket, tracing: tracer, close }
}
