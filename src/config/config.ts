import { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { z } from 'zod'
import type { LogFormatSetting } from '../observability/logger.ts'
import { tracingFromEnv, type TracingConfig } from './tracing-config.ts'

/** One agent profile: an ACP agent started over stdio. */
export const agentProfileSchema = z.object({
  command: z.array(z.string().min(1)).min(1),
  env: z.record(z.string(), z.string()).default({}),
})
export type AgentProfile = z.infer<typeof agentProfileSchema>

const agentProfilesSchema = z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/), agentProfileSchema)

/** AGENT_PROFILES is either inline JSON or the path of a JSON file. */
const agentProfilesFromEnv = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined || raw.trim() === '') return {}
    const text = raw.trim().startsWith('{') ? raw : readProfileFile(raw, ctx)
    if (text === undefined) return z.NEVER
    try {
      return JSON.parse(text) as unknown
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is not valid JSON' })
      return z.NEVER
    }
  })
  .pipe(agentProfilesSchema)

function readProfileFile(path: string, ctx: z.RefinementCtx): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    ctx.addIssue({ code: 'custom', message: `cannot read the file ${path}` })
    return undefined
  }
}

/**
 * REPOSITORY_ROOTS: `:`-separated absolute directories a task repository's localPath must lie
 * in; unset or empty means the home directory of the user running the server.
 */
const repositoryRootsFromEnv = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    const entries = (raw ?? '').split(':').filter((entry) => entry.trim() !== '')
    if (entries.length === 0) return [os.homedir()]
    const relative = entries.filter((entry) => !path.isAbsolute(entry))
    if (relative.length > 0) {
      ctx.addIssue({ code: 'custom', message: `must list absolute directories; not absolute: ${relative.join(', ')}` })
      return z.NEVER
    }
    return entries.map((entry) => path.resolve(entry))
  })

/**
 * CORS_ORIGINS: comma-separated origins (`scheme://host[:port]`, as a browser sends them in the
 * Origin header) whose pages may call this server; unset or empty means same origin only. Matched
 * exactly, so each entry must already be in the form a browser serializes (no path, no trailing
 * slash, lower-case host, no default port): a near miss would silently never match.
 */
const corsOriginsFromEnv = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    const entries = (raw ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
    const malformed = entries.filter((entry) => serializedOrigin(entry) !== entry)
    if (malformed.length > 0) {
      const hints = malformed.map((entry) => (serializedOrigin(entry) ? `${entry} (write ${serializedOrigin(entry)})` : entry))
      ctx.addIssue({ code: 'custom', message: `must list origins like https://app.example.com:8443; not an origin: ${hints.join(', ')}` })
      return z.NEVER
    }
    return [...new Set(entries)]
  })

/** The origin a browser would send for a page at `entry`, or undefined when it is not an http(s) URL. */
function serializedOrigin(entry: string): string | undefined {
  try {
    const url = new URL(entry)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : undefined
  } catch {
    return undefined
  }
}

/**
 * DATABASE_URL's shape, before anything is opened: a `file:` URL naming a file, or a PostgreSQL URL
 * that parses. Messages never repeat the URL (it may carry a password), only a scheme.
 */
const databaseUrlFromEnv = z
  .string()
  .default('file:./data/app.db')
  .superRefine((url, ctx) => {
    const problem = databaseUrlProblem(url)
    if (problem) ctx.addIssue({ code: 'custom', message: problem })
  })

const DATABASE_URL_FORMS = 'file:./data/app.db (SQLite) or postgres://user:password@host:5432/database (PostgreSQL)'

function databaseUrlProblem(url: string): string | undefined {
  if (url.trim() === '') return `is empty; unset it for the default file:./data/app.db, or set ${DATABASE_URL_FORMS}`
  if (url.startsWith('file:')) {
    const file = url.slice('file:'.length).split('?', 1)[0]!
    if (file === '') return 'file: names no file; write file:./data/app.db or another file path'
    if (file.endsWith('/')) return 'names a folder (it ends with /); name a database file in it, such as file:./data/app.db'
    return undefined
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    try {
      new URL(url)
      return undefined
    } catch {
      return 'is not a valid PostgreSQL URL; write postgres://user:password@host:5432/database (percent-encode special characters in the password)'
    }
  }
  const scheme = /^([a-z][a-z0-9+.-]{0,19}):/i.exec(url)?.[1]
  return `${scheme ? `the scheme ${scheme}: is not supported` : 'is not a database URL'}; use ${DATABASE_URL_FORMS}`
}

const emptyAsUndefined = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v)

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: databaseUrlFromEnv,
  REDIS_URL: z.preprocess(emptyAsUndefined, z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional()),
  ADMIN_TOKEN: z.preprocess(emptyAsUndefined, z.string().min(16, 'must be at least 16 characters').optional()),
  AGENT_PROFILES: agentProfilesFromEnv,
  GITHUB_WEBHOOK_SECRET: z.preprocess(emptyAsUndefined, z.string().optional()),
  // GitHub's own payloads stay far below 5 MiB for the events this server reads.
  GITHUB_WEBHOOK_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(5 * 1024 * 1024),
  // Unverified bodies of all webhook requests together; room for one maximal body and then some.
  GITHUB_WEBHOOK_UNVERIFIED_BYTES: z.coerce.number().int().min(1024).default(8 * 1024 * 1024),
  REPOSITORY_ROOTS: repositoryRootsFromEnv,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.preprocess(emptyAsUndefined, z.enum(['auto', 'json', 'pretty']).default('auto')),
  NODE_ENV: z.string().optional(),
  // README "Limits": generous enough that people and the test suite never meet them; 0 turns a rate limit off.
  RATE_LIMIT_MUTATIONS: z.coerce.number().int().min(0).default(1000),
  RATE_LIMIT_SUBSCRIPTIONS: z.coerce.number().int().min(0).default(500),
  RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  MAX_SUBSCRIPTIONS_PER_CONNECTION: z.coerce.number().int().min(1).default(100),
  SESSION_LEASE_MS: z.coerce.number().int().min(300).max(3_600_000).default(10_000),
  // Unset: long enough for a dead owner's lease to run out and another instance to take over.
  FORWARD_TIMEOUT_MS: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(100).max(600_000).optional()),
  // Fractions allowed (0.5 = 30 minutes); a year at most.
  FEED_RETENTION_HOURS: z.coerce.number().positive().max(8760).default(24),
  CORS_ORIGINS: corsOriginsFromEnv,
})

export type DatabaseProvider = 'sqlite' | 'postgres'

export interface Config {
  port: number
  host: string
  databaseUrl: string
  databaseProvider: DatabaseProvider
  redisUrl?: string
  adminToken?: string
  agentProfiles: Record<string, AgentProfile>
  githubWebhookSecret?: string
  /** Per webhook body (413 above it) and, shared by all requests, bytes held before their signature is verified (503 past it). */
  githubWebhookLimits: { maxBodyBytes: number; unverifiedBytes: number }
  /** Absolute directories; a task repository's localPath must resolve inside one of them. */
  repositoryRoots: string[]
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL']
  /** LOG_FORMAT: json, pretty, or auto (pretty on a terminal outside production; see chooseLogFormat). */
  logFormat: LogFormatSetting
  /** NODE_ENV as given (`production` keeps JSON logs on a terminal too). */
  nodeEnv?: string
  /** Per caller and window: root mutation fields and subscription starts (0 = unlimited). */
  rateLimits: { mutations: number; subscriptions: number; windowSeconds: number }
  maxSubscriptionsPerConnection: number
  /** How long an instance's claim on the sessions it runs lasts without renewal. */
  sessionLeaseMs: number
  /** How long a command for a session owned elsewhere waits for the owner (or a takeover) before UNAVAILABLE. */
  forwardTimeoutMs: number
  /** FEED_RETENTION_HOURS: how long tombstones (and so resume cursors) are kept at least. */
  feedRetentionMs: number
  /** CORS_ORIGINS: browser origins allowed to call cross-origin, with credentials (empty: same origin only). */
  corsOrigins: string[]
  /** OTLP trace export (README "Tracing"); absent: tracing is off and none of its code runs. */
  tracing?: TracingConfig
}

export class ConfigError extends Error {}

/** A relative SQLite path is taken from the working directory the server was started in. */
function absoluteSqliteUrl(url: string): string {
  const [file, query] = url.slice('file:'.length).split('?', 2) as [string, string | undefined]
  if (file === ':memory:' || path.isAbsolute(file)) return url
  return `file:${path.resolve(file)}${query ? `?${query}` : ''}`
}

export function databaseProviderOf(url: string): DatabaseProvider {
  return url.startsWith('file:') ? 'sqlite' : 'postgres'
}

/** Parses and validates the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env)
  const { tracing, issues: tracingIssues } = tracingFromEnv(env)
  if (!parsed.success || tracingIssues.length > 0) {
    // One line per bad variable, each whole on its own: what an operator reads, or a log collects.
    const lines = (parsed.error?.issues ?? []).map((i) => `Invalid configuration: ${i.path.join('.') || '(environment)'}: ${i.message}`)
    lines.push(...tracingIssues.map((issue) => `Invalid configuration: ${issue}`))
    throw new ConfigError(lines.join('\n'))
  }
  const e = parsed.data
  if (e.GITHUB_WEBHOOK_UNVERIFIED_BYTES < e.GITHUB_WEBHOOK_MAX_BODY_BYTES)
    throw new ConfigError(
      'Invalid configuration: GITHUB_WEBHOOK_UNVERIFIED_BYTES: must be at least GITHUB_WEBHOOK_MAX_BODY_BYTES (a body of the largest size must fit)',
    )
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: databaseProviderOf(e.DATABASE_URL) === 'sqlite' ? absoluteSqliteUrl(e.DATABASE_URL) : e.DATABASE_URL,
    databaseProvider: databaseProviderOf(e.DATABASE_URL),
    redisUrl: e.REDIS_URL,
    adminToken: e.ADMIN_TOKEN,
    agentProfiles: e.AGENT_PROFILES,
    githubWebhookSecret: e.GITHUB_WEBHOOK_SECRET,
    githubWebhookLimits: { maxBodyBytes: e.GITHUB_WEBHOOK_MAX_BODY_BYTES, unverifiedBytes: e.GITHUB_WEBHOOK_UNVERIFIED_BYTES },
    repositoryRoots: e.REPOSITORY_ROOTS,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    nodeEnv: e.NODE_ENV,
    rateLimits: { mutations: e.RATE_LIMIT_MUTATIONS, subscriptions: e.RATE_LIMIT_SUBSCRIPTIONS, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS },
    maxSubscriptionsPerConnection: e.MAX_SUBSCRIPTIONS_PER_CONNECTION,
    sessionLeaseMs: e.SESSION_LEASE_MS,
    forwardTimeoutMs: e.FORWARD_TIMEOUT_MS ?? e.SESSION_LEASE_MS + 5_000,
    feedRetentionMs: Math.round(e.FEED_RETENTION_HOURS * 3_600_000),
    corsOrigins: e.CORS_ORIGINS,
    ...(tracing && { tracing }),
  }
}
