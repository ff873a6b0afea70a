import { randomUUID } from 'node:crypto'
import { DemoApiError, errorText, graphql, type GraphQLCall } from './graphql.ts'
import { ANSWERS, demoScript, scriptPrompt, type Random, type ScriptKind } from './scripts.ts'
import type { DemoTask } from './seed.ts'

export interface DemoActivityOptions {
  graphqlUrl: string
  /** A member of the tasks' workspace (the seeded user's token). */
  token: string
  /** Tasks without a session stay idle. */
  tasks: readonly DemoTask[]
  /** Every choice (scripts, which row, how long a request waits) comes from here; Math.random by default. */
  random?: Random
  /** Time between two looks at the workspace (2.5 s by default): each look acts on a few rows. */
  intervalMs?: number
  /** Where failures (and rate-limit pauses) are reported; console.warn by default. Nothing is ever thrown. */
  log?: (message: string) => void
}

export interface DemoActivityStats {
  ticks: number
  scriptsSent: number
  permissionsAnswered: number
  clarificationsAnswered: number
  errorsDismissed: number
  gitRefreshes: number
  failures: number
}

export interface DemoActivity {
  /** Stops the loop and waits for the requests in flight; afterwards the activity sends nothing. Idempotent. */
  stop(): Promise<void>
  readonly stats: Readonly<DemoActivityStats>
}

type RowState = 'generating' | 'permission' | 'clarification' | 'error' | 'idle' | 'busy'

interface Summary {
  taskId: string
  foregroundActivity: 'GENERATING' | 'BACKGROUND' | null
  pendingAction: 'PERMISSION' | 'CLARIFICATION' | null
  activeError: { stamp: string } | null
  primarySession: { id: string; state: string } | null
}

/** What the activity remembers of one session's row (its own bookkeeping; the truth is the API). */
interface Track {
  task: DemoTask & { sessionId: string }
  state: RowState
  /** When the row entered its current state, and how long the demo lets it stay there before acting. */
  since: number
  holdMs: number
  /** Something was sent and may not show yet: the row is left alone until it leaves `sentFrom` (or until then). */
  sentUntil: number
  sentFrom?: RowState
  /** The state the last script leads to: the row counts as that until it gets there (or ends idle). */
  expect?: ShownKind
  /** The last script wrote files: observe Git once the row is idle again. */
  wrote: boolean
  scripts: number
}

const SUMMARIES = /* GraphQL */ `
  query DemoSummaries($ids: [ID!]!) {
    taskStatusSummaries(taskIds: $ids) {
      id taskId foregroundActivity pendingAction activeError { stamp } primarySession { id state }
    }
  }
`
const PENDING = /* GraphQL */ `
  query DemoPending($id: ID!) { session(id: $id) { id messages(last: 50) { id kind status pendingId } } }
`
const ADD_MESSAGE = /* GraphQL */ `
  mutation DemoAddMessage($input: AddMessageInput!) { addMessage(input: $input) { replayed message { id } } }
`
const RESPOND = /* GraphQL */ `
  mutation DemoRespond($sessionId: ID!, $pendingId: ID!, $optionId: String!) {
    respondToPermission(sessionId: $sessionId, pendingId: $pendingId, optionId: $optionId) { id status }
  }
`
const ANSWER = /* GraphQL */ `
  mutation DemoAnswer($sessionId: ID!, $pendingId: ID!, $answer: String!) {
    answerClarification(sessionId: $sessionId, pendingId: $pendingId, answer: $answer) { id status }
  }
`
const DISMISS = /* GraphQL */ `
  mutation DemoDismiss($sessionId: ID!) { dismissSessionError(sessionId: $sessionId) { id } }
`
const REFRESH_GIT = /* GraphQL */ `
  mutation DemoRefreshGit($sessionId: ID!) { refreshSessionGit(sessionId: $sessionId) { id changedFiles } }
`

const SHOWN_KINDS = ['generating', 'permission', 'clarification', 'error'] as const
type ShownKind = (typeof SHOWN_KINDS)[number]

/** Scripts sent for churn (on top of keeping the mix), by weight. */
const CHURN: [ScriptKind, number][] = [
  ['generating', 3],
  ['write', 2],
  ['subagents', 1],
  ['quick', 1],
  ['permission', 1],
  ['clarification', 1],
  ['error', 1],
]

/** The script kind that makes a row show `kind`. */
const SCRIPT_FOR: Record<ShownKind, ScriptKind> = { generating: 'generating', permission: 'permission', clarification: 'clarification', error: 'error' }

function classify(summary: Summary | undefined): RowState {
  if (!summary) return 'busy'
  if (summary.pendingAction === 'PERMISSION') return 'permission'
  if (summary.pendingAction === 'CLARIFICATION') return 'clarification'
  const state = summary.primarySession?.state
  if (state === 'RUNNING') return 'generating'
  if (summary.activeError) return 'error'
  if (state === 'STARTING' || state === 'CREATED') return 'busy'
  return 'idle'
}

/**
 * Keeps scripted `mock` activity going on the seeded sessions until stop(): at any moment some rows
 * generate, some wait for a permission or a clarification, some show an error, some are idle.
 * Each look reads every summary in one query, answers a request or clears an error that has been
 * shown long enough (always leaving a few), refreshes Git after scripts that wrote files, tops up
 * whichever state is short of its share and sends one more script to an idle row. Every failure is
 * caught and logged; a RATE_LIMITED answer pauses the loop for its retryAfterMs.
 */
export function startDemoActivity(options: DemoActivityOptions): DemoActivity {
  const random = options.random ?? Math.random
  const intervalMs = options.intervalMs ?? 2_500
  const log = options.log ?? ((message: string) => console.warn(`[demo] ${message}`))
  const call: GraphQLCall = { graphqlUrl: options.graphqlUrl, token: options.token, timeoutMs: 15_000 }
  const stats: DemoActivityStats = { ticks: 0, scriptsSent: 0, permissionsAnswered: 0, clarificationsAnswered: 0, errorsDismissed: 0, gitRefreshes: 0, failures: 0 }
  const pick = <T>(items: readonly T[]): T | undefined => (items.length ? items[Math.floor(random() * items.length) % items.length] : undefined)
  const between = (min: number, max: number) => Math.round(min + random() * (max - min))

  const tracks: Track[] = options.tasks
    .filter((t): t is DemoTask & { sessionId: string } => t.sessionId !== null)
    .map((task) => ({ task, state: 'idle', since: Date.now(), holdMs: 0, sentUntil: 0, wrote: false, scripts: 0 }))
  const n = tracks.length
  const targets: Record<ShownKind, number> = {
    generating: Math.max(1, Math.round(n * 0.22)),
    permission: Math.max(1, Math.round(n * 0.17)),
    clarification: Math.max(1, Math.round(n * 0.12)),
    error: Math.max(1, Math.round(n * 0.12)),
  }
  /** At least this many requests / errors stay on screen (unless one has been shown for longHold). */
  const keep: Record<'permission' | 'clarification' | 'error', number> = {
    permission: Math.max(1, Math.floor(targets.permission / 2)),
    clarification: Math.max(1, Math.floor(targets.clarification / 2)),
    error: Math.max(1, Math.floor(targets.error / 2)),
  }
  /** How long a row stays in a state before the demo may act on it. */
  const holdFor = () => intervalMs * between(4, 14)
  const longHold = intervalMs * 40

  let stopped = false
  let pausedUntil = 0
  let wake: (() => void) | undefined

  const failed = (what: string, error: unknown) => {
    if (stopped && error instanceof DemoApiError && error.code === 'NETWORK') return // the server went first
    stats.failures++
    if (error instanceof DemoApiError && error.code === 'RATE_LIMITED') {
      pausedUntil = Math.max(pausedUntil, Date.now() + (error.retryAfterMs ?? 5_000))
      log(`${what}: rate limited; pausing the activity for ${Math.ceil((error.retryAfterMs ?? 5_000) / 1000)} s`)
      return
    }
    log(`${what} failed: ${errorText(error)}`)
  }
  /** Runs one API action; a failure is logged and reported as false, never thrown. */
  const attempt = async (what: string, action: () => Promise<unknown>): Promise<boolean> => {
    if (stopped || Date.now() < pausedUntil) return false
    try {
      await action()
      return true
    } catch (error) {
      failed(what, error)
      return false
    }
  }

  const send = (track: Track, kind: ScriptKind) =>
    attempt(`script ${kind} to task ${track.task.id}`, async () => {
      const script = demoScript(kind, random, { models: track.scripts === 0 })
      await graphql(call, ADD_MESSAGE, {
        input: { taskId: track.task.id, sessionId: track.task.sessionId, clientMessageId: `demo-${randomUUID()}`, content: scriptPrompt(script) },
      })
      stats.scriptsSent++
      track.scripts++
      track.sentFrom = track.state
      track.sentUntil = Date.now() + Math.max(3_000, intervalMs * 3)
      track.expect = (SHOWN_KINDS as readonly string[]).includes(kind) ? (kind as ShownKind) : undefined
      track.wrote ||= script.writes
    })

  const answerPending = (track: Track) =>
    attempt(`answering the requests of task ${track.task.id}`, async () => {
      const { session } = await graphql<{ session: { messages: { kind: string; status: string | null; pendingId: string | null }[] } | null }>(
        call,
        PENDING,
        { id: track.task.sessionId },
      )
      const open = (session?.messages ?? []).filter((m) => m.status === 'PENDING' && m.pendingId)
      for (const message of open) {
        if (stopped) return
        if (message.kind === 'PERMISSION_REQUEST') {
          await graphql(call, RESPOND, { sessionId: track.task.sessionId, pendingId: message.pendingId, optionId: random() < 0.8 ? 'allow' : 'reject' })
          stats.permissionsAnswered++
        } else if (message.kind === 'CLARIFICATION') {
          await graphql(call, ANSWER, { sessionId: track.task.sessionId, pendingId: message.pendingId, answer: pick(ANSWERS) ?? 'Yes.' })
          stats.clarificationsAnswered++
        }
      }
      // Let the turn go on before touching the row again.
      track.sentFrom = track.state
      track.sentUntil = Date.now() + Math.max(2_000, intervalMs * 2)
    })

  const refreshGit = (track: Track) =>
    attempt(`refreshing Git of task ${track.task.id}`, async () => {
      track.wrote = false
      await graphql(call, REFRESH_GIT, { sessionId: track.task.sessionId })
      stats.gitRefreshes++
    })

  const dismiss = (track: Track) =>
    attempt(`dismissing the error of task ${track.task.id}`, async () => {
      await graphql(call, DISMISS, { sessionId: track.task.sessionId })
      stats.errorsDismissed++
      track.sentFrom = track.state
      track.sentUntil = Date.now() + Math.max(2_000, intervalMs * 2)
    })

  /** First look: every session gets a script, in the proportions of the targets, so the mix shows at once. */
  async function kickOff(): Promise<void> {
    const order = [...tracks].sort(() => random() - 0.5)
    const plan: ScriptKind[] = [
      ...Array<ScriptKind>(targets.generating).fill('generating'),
      ...Array<ScriptKind>(targets.permission).fill('permission'),
      ...Array<ScriptKind>(targets.clarification).fill('clarification'),
      ...Array<ScriptKind>(targets.error).fill('error'),
      'write',
      'write',
      'subagents',
    ]
    const jobs = order.map((track, i) => () => send(track, plan[i] ?? (random() < 0.5 ? 'quick' : 'write')))
    // A few at a time: each is a mutation, and the first prompts of many agents at once load the machine.
    const workers = Array.from({ length: 4 }, async () => {
      for (let job = jobs.shift(); job && !stopped; job = jobs.shift()) await job()
    })
    await Promise.all(workers)
  }

  async function tick(): Promise<void> {
    stats.ticks++
    let summaries: Summary[]
    try {
      summaries = (await graphql<{ taskStatusSummaries: (Summary | null)[] }>(call, SUMMARIES, { ids: tracks.map((t) => t.task.id) })).taskStatusSummaries.filter(
        (s): s is Summary => s !== null,
      )
    } catch (error) {
      failed('reading the summaries', error)
      return
    }
    const byTask = new Map(summaries.map((s) => [s.taskId, s]))
    const now = Date.now()
    for (const track of tracks) {
      const state = classify(byTask.get(track.task.id))
      if (state !== track.state) {
        track.state = state
        track.since = now
        track.holdMs = holdFor()
      }
      // What was sent has shown: the row may be acted on again.
      if (track.sentFrom !== undefined && state !== track.sentFrom) {
        track.sentUntil = Math.min(track.sentUntil, now)
        track.sentFrom = undefined
      }
      if (track.expect && (state === track.expect || (state === 'idle' && track.sentUntil <= now))) track.expect = undefined
    }
    const free = (t: Track) => t.sentUntil <= now
    const inState = (state: RowState) => tracks.filter((t) => t.state === state)
    const overdue = (t: Track) => free(t) && now - t.since >= t.holdMs

    // 1. A request shown long enough is answered, always leaving a few on screen (unless shown very long).
    for (const kind of ['permission', 'clarification'] as const) {
      const rows = inState(kind)
      const due = rows.filter((t) => overdue(t) && (rows.length > keep[kind] || now - t.since >= longHold))
      const track = pick(due)
      if (track) await answerPending(track)
    }
    // 2. An error shown long enough is dismissed now and then (the next script clears it too).
    const errors = inState('error')
    const staleError = pick(errors.filter((t) => overdue(t) && (errors.length > keep.error || now - t.since >= longHold)))
    if (staleError && random() < 0.4) await dismiss(staleError)
    // 3. Git totals move as soon as a script that wrote files has finished.
    for (const track of inState('idle').filter((t) => t.wrote && free(t)).slice(0, 2)) await refreshGit(track)

    // 4. Top up the (at most two) states furthest below their share, then 5. one more script for churn.
    const available = () =>
      tracks.filter((t) => free(t) && (t.state === 'idle' || (t.state === 'error' && overdue(t) && (errors.length > keep.error || now - t.since >= longHold))))
    // A row counts as what its last script leads to until it gets there.
    const shown = (kind: ShownKind) => tracks.filter((t) => (t.expect ?? t.state) === kind).length
    const deficits = SHOWN_KINDS.map((kind) => ({ kind, missing: targets[kind] - shown(kind) }))
      .filter((d) => d.missing > 0)
      .sort((a, b) => b.missing - a.missing)
    for (const short of deficits.slice(0, 2)) {
      const row = pick(available().filter((t) => t.state === 'idle'))
      if (row) await send(row, SCRIPT_FOR[short.kind])
    }
    const churn = pick(available())
    if (churn && random() < 0.7) await send(churn, weighted(CHURN, random))
  }

  const loop = (async () => {
    if (tracks.length === 0) return
    await kickOff()
    while (!stopped) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      wake = undefined
      if (stopped) break
      if (Date.now() < pausedUntil) continue
      try {
        await tick()
      } catch (error) {
        failed('activity tick', error) // a bug of ours must not end the demo either
      }
    }
  })().catch((error: unknown) => failed('activity', error))

  let stopping: Promise<void> | undefined
  return {
    stats,
    stop: () =>
      (stopping ??= (async () => {
        stopped = true
        wake?.()
        await loop
      })()),
  }
}

function weighted<T>(entries: readonly [T, number][], random: Random): T {
  const total = entries.reduce((sum, [, w]) => sum + w, 0)
  let roll = random() * total
  for (const [value, weight] of entries) {
    roll -= weight
    if (roll < 0) return value
  }
  return entries[entries.length - 1]![0]
}
