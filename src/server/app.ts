import { createServer, type RequestListener, type Server as HttpServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Config } from '../config/config.ts'
import { createLogger, type Logger } from '../observability/logger.ts'
import { createMetrics } from '../observability/metrics.ts'
import { connectDatabase, isDatabaseUnavailable, isDatabaseUnreachable } from '../store/db.ts'
import { deployMigrations, ensureSqliteDirectory, pendingMigrations } from '../store/migrate.ts'
import { createStore, type Clock, type Store } from '../store/store.ts'
import { bootstrapAdmin, principalForTokenHash } from '../store/users.ts'
import { memberWorkspaceIds } from '../store/workspaces.ts'
import { AccessControl } from '../access/access-control.ts'
import { hashToken } from '../auth/tokens.ts'
import { createMemoryPubSub } from '../pubsub/memory.ts'
import { createRedisPubSub } from '../pubsub/redis.ts'
import type { PubSub } from '../pubsub/pubsub.ts'
import { startTaskFeed } from '../feed/task-feed.ts'
import { createFeedMetrics } from '../feed/feed-metrics.ts'
import { startTombstoneRetention } from '../feed/tombstone-retention.ts'
import { ensureFeedEpoch } from '../store/feed.ts'
import { Projector } from '../projector/projector.ts'
import { recoverAfterRestart } from '../recovery/startup-recovery.ts'
import { createYogaServer } from './yoga.ts'
import { createRateLimits } from './rate-limits.ts'
import { attachDeliveryGateway } from '../delivery/ws-gateway.ts'
import { handleOperationalRoute } from './http-routes.ts'
import { corsPolicy } from './cors.ts'
import { handleWebPage } from './web-page.ts'
import { Readiness } from './readiness.ts'
import { DatabaseHealth } from './database-health.ts'
import { runPreflight, type PreflightOptions } from './preflight.ts'
import { SessionService } from '../agents/session-service.ts'
import { GitMonitor } from '../git/monitor.ts'
import { agentProfiles } from '../agents/profiles.ts'
import { createAgentMetrics } from '../agents/agent-metrics.ts'
import type { Scheduler } from '../util/scheduler.ts'
import type { SchedulerLimits } from '../delivery/outbound-scheduler.ts'
import { InstanceLease, newInstanceId } from '../instances/instance-lease.ts'
import { AgentWatchdog } from '../agents/watchdog/agent-watchdog.ts'
import { CommandBus } from '../instances/command-bus.ts'
import { SessionCommands } from '../instances/session-commands.ts'
import { createInstanceMetrics } from '../instances/instance-metrics.ts'
import { takeOverExpired } from '../instances/takeover.ts'
import { recoverSessions } from '../recovery/startup-recovery.ts'
import { sessionsOwnedWithOpenWork } from '../store/instances.ts'
import { ByteBudget } from '../github/body-budget.ts'

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
  close(): Promise<void>
}

/**
 * Until startup recovery has finished (and again while shutting down) GraphQL answers 503 with a
 * Retry-After: what it would serve is pre-recovery state a client must not take as current.
 */
function refuseUntilReady(res: ServerResponse): void {
  const body = {
    errors: [{ message: 'The server is starting or stopping; retry shortly.', extensions: { code: 'UNAVAILABLE' } }],
  }
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify(body))
}

function printAdminTokenOnce(token: string): void {
  process.stderr.write(
    `\n  Admin token (shown once; only its hash is stored):\n\n    ${token}\n\n` +
      `  Use it as: Authorization: Bearer <token>\n\n`,
  )
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const instanceId = newInstanceId()
  const logger = (options.logger ?? createLogger(config.logLevel)).child({ instance: instanceId })
  const readiness = new Readiness()
  const metrics = createMetrics()

  // Bound before anything else, so a port clash ends the start before a file is created or a token printed;
  // until the server is assembled every request but /healthz is refused as not ready.
  let serve: RequestListener = (req, res) =>
    (req.url ?? '').split('?', 1)[0] === '/healthz'
      ? void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
      : refuseUntilReady(res)
  // CORS before any route, in every phase (starting, serving, stopping): one policy for every path.
  const cors = corsPolicy(config.corsOrigins)
  const httpServer = createServer((req, res) => cors.handle(req, res) || serve(req, res))
  const preflight = await runPreflight(config, httpServer, options.preflight)

  if (config.databaseProvider === 'sqlite') ensureSqliteDirectory(config.databaseUrl)
  const connect = () => connectDatabase(config.databaseProvider, config.databaseUrl, { onQuery: options.onQuery })
  let db = await connect()
  if (!options.skipMigrations) {
    const started = performance.now()
    const pending = await pendingMigrations(db, config.databaseProvider)
    if (pending.length > 0) {
      // The CLI takes the database for itself (SQLite's write lock): this connection waits outside.
      await db.$disconnect()
      await deployMigrations(config.databaseProvider, config.databaseUrl)
      db = await connect()
    }
    const ms = Math.round(performance.now() - started)
    logger.info({ provider: config.databaseProvider, pending: pending.length, ms }, pending.length > 0 ? 'migrations applied' : 'migrations up to date')
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

  const profiles = agentProfiles(config.agentProfiles)
  // Ends the agents should this process stall past its lease or die (started with the first agent).
  const watchdog = new AgentWatchdog({ logger })
  const sessions = new SessionService({
    store,
    pubsub,
    logger,
    metrics: createAgentMetrics(metrics.registry),
    profiles,
    scheduler: options.scheduler,
    instanceId,
    watchdog,
    leaseHeld: () => lease.valid,
  })

  const git = new GitMonitor({ store, pubsub, logger, liveSessions: () => sessions.liveSessionIds() })
  git.start()

  // Ownership: a lease renewed while this process lives; commands for sessions owned elsewhere go there.
  const instanceMetrics = createInstanceMetrics(metrics.registry, () => sessions.liveSessionIds().length)
  // Prompts a dead process left queued go out from here (their owner now), after each recovery, in the background.
  const recovery = { store, logger, pubsub, resumableProfiles: new Set(profiles.keys()), dispatchQueued: (ids: string[]) => sessions.dispatchStoredPrompts(ids) }
  const lease: InstanceLease = new InstanceLease(instanceId, {
    store,
    logger,
    leaseMs: config.sessionLeaseMs,
    deadlines: watchdog,
    // The SQLite lock proves this server alone: its own lease must never end its own sessions.
    exclusive: config.databaseProvider === 'sqlite',
    hooks: {
      runningSessions: () => sessions.liveSessionIds(),
      abandon: (ids) => sessions.abandon(ids),
      leaseLost: () => sessions.abandon(sessions.liveSessionIds()),
      // This instance's own lease lapsed and its agents ended: the owner lost the sessions it ran.
      recoverOwned: async () => void (await recoverSessions(recovery, await sessionsOwnedWithOpenWork(store, instanceId), 'OWNER_LOST')),
      afterRenewal: async () => void (await takeOverExpired({ ...recovery, instanceId, metrics: instanceMetrics, git, reason: 'lease' })),
    },
  })
  await lease.register()
  lease.start()
  const bus = new CommandBus({ pubsub, instanceId, logger })
  const commands = new SessionCommands({
    store,
    service: sessions,
    git,
    bus,
    instanceId,
    logger,
    metrics: instanceMetrics,
    forwardTimeoutMs: config.forwardTimeoutMs,
    ownerCheckMs: Math.max(50, Math.min(1000, Math.floor(config.sessionLeaseMs / 10))),
    leaseValid: () => lease.valid,
    recover: (claimed) => recoverSessions(recovery, claimed, 'OWNER_LOST'),
  })
  commands.start()

  const rateLimits = createRateLimits({ ...config.rateLimits, redisUrl: config.redisUrl }, logger)
  // Names only: a profile's command and environment never leave the configuration.
  const agentProfileNames = [...profiles.keys()].sort()
  const yoga = createYogaServer({ store, pubsub, access, logger, metrics, projector, sessions: commands, git, repositoryRoots: config.repositoryRoots, feed, agentProfiles: agentProfileNames, rateLimits, database })
  // One budget for every webhook request this process serves (README "Git and GitHub").
  const webhookBudget = new ByteBudget(config.githubWebhookLimits.unverifiedBytes)
  serve = (req, res) => {
    handleOperationalRoute(req, res, {
      readiness,
      database,
      registry: metrics.registry,
      webhook: { secret: config.githubWebhookSecret, store, logger, maxBodyBytes: config.githubWebhookLimits.maxBodyBytes, budget: webhookBudget },
    })
      .then(async (handled) => {
        // The page loads before readiness; its client retries the GraphQL calls answered UNAVAILABLE.
        if (handled || (await handleWebPage(req, res, options.webRoot))) return
        if (!readiness.ready) {
          metrics.graphqlErrors.inc({ code: 'UNAVAILABLE' })
          return refuseUntilReady(res)
        }
        return yoga.handle(req, res)
      })
      .catch((error: unknown) => {
        logger.error({ err: error, path: req.url }, 'request failed')
        if (res.headersSent) return
        // A webhook the database was too busy for, or could not be reached for: the sender may redeliver it (nothing was recorded as processed).
        if (isDatabaseUnreachable(error)) database.markUnreachable()
        if (isDatabaseUnavailable(error)) res.writeHead(503, { 'retry-after': '1' }).end()
        else res.writeHead(500).end()
      })
  }
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
      logger.info('shut down')
    })())

  return { url, port, store, pubsub, access, projector, sessions, commands, instanceId, lease, git, readiness, database, logger, httpServer, gateway: websocket, close }
}
