import { graphql } from './graphql.ts'
import type { Random, ScriptKind } from './scripts.ts'
import type { ActivityContext } from './activity-context.ts'
import { answerPending, dismissError, refreshGit, sendScript } from './activity-actions.ts'
import { observe, SHOWN_KINDS, type Mix, type RowState, type ShownKind, type Summary, type Track } from './activity-rows.ts'

const SUMMARIES = /* GraphQL */ `
  query DemoSummaries($ids: [ID!]!) {
    taskStatusSummaries(taskIds: $ids) {
      id taskId foregroundActivity pendingAction activeError { stamp } primarySession { id state }
    }
  }
`

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

/** First look: every session gets a script, in the proportions of the targets, so the mix shows at once. */
export async function kickOff(ctx: ActivityContext, tracks: readonly Track[], { targets }: Mix): Promise<void> {
  const order = [...tracks].sort(() => ctx.random() - 0.5)
  const plan: ScriptKind[] = [
    ...Array<ScriptKind>(targets.generating).fill('generating'),
    ...Array<ScriptKind>(targets.permission).fill('permission'),
    ...Array<ScriptKind>(targets.clarification).fill('clarification'),
    ...Array<ScriptKind>(targets.error).fill('error'),
    'write',
    'write',
    'subagents',
  ]
  const jobs = order.map((track, i) => () => sendScript(ctx, track, plan[i] ?? (ctx.random() < 0.5 ? 'quick' : 'write')))
  // A few at a time: each is a mutation, and the first prompts of many agents at once load the machine.
  const workers = Array.from({ length: 4 }, async () => {
    for (let job = jobs.shift(); job && !ctx.stopped; job = jobs.shift()) await job()
  })
  await Promise.all(workers)
}

/** The rows of one look, as of `now`: which are free to act on, and which have shown their state long enough. */
class Look {
  constructor(
    readonly tracks: readonly Track[],
    readonly mix: Mix,
    readonly now: number,
  ) {}

  free = (t: Track) => t.sentUntil <= this.now
  inState = (state: RowState) => this.tracks.filter((t) => t.state === state)
  overdue = (t: Track) => this.free(t) && this.now - t.since >= t.holdMs
  /** Overdue, and acting on it still leaves `keep` of its kind on screen (or it has been shown very long). */
  mayClear = (t: Track, shownOfKind: number, keep: number) => this.overdue(t) && (shownOfKind > keep || this.now - t.since >= this.mix.longHoldMs)
}

/**
 * One look at the workspace: reads every summary in one query, answers a request or clears an
 * error shown long enough, refreshes Git after scripts that wrote files, tops up the states short
 * of their share, and sends one more script for churn.
 */
export async function tick(ctx: ActivityContext, tracks: readonly Track[], mix: Mix): Promise<void> {
  ctx.stats.ticks++
  let summaries: Summary[]
  try {
    const read = await graphql<{ taskStatusSummaries: (Summary | null)[] }>(ctx.call, SUMMARIES, { ids: tracks.map((t) => t.task.id) })
    summaries = read.taskStatusSummaries.filter((s): s is Summary => s !== null)
  } catch (error) {
    ctx.failed('reading the summaries', error)
    return
  }
  const now = Date.now()
  // A row entering a state is left in it for 4 to 14 looks before the demo may act on it.
  observe(tracks, summaries, now, () => ctx.intervalMs * ctx.between(4, 14))
  const look = new Look(tracks, mix, now)
  await answerLongShownRequests(ctx, look)
  await dismissLongShownError(ctx, look)
  await refreshGitAfterWrites(ctx, look)
  await keepTheMix(ctx, look)
}

/** A request shown long enough is answered, always leaving a few on screen (unless shown very long). */
async function answerLongShownRequests(ctx: ActivityContext, look: Look): Promise<void> {
  for (const kind of ['permission', 'clarification'] as const) {
    const rows = look.inState(kind)
    const track = ctx.pick(rows.filter((t) => look.mayClear(t, rows.length, look.mix.keep[kind])))
    if (track) await answerPending(ctx, track)
  }
}

/** An error shown long enough is dismissed now and then (the next script clears it too). */
async function dismissLongShownError(ctx: ActivityContext, look: Look): Promise<void> {
  const errors = look.inState('error')
  const stale = ctx.pick(errors.filter((t) => look.mayClear(t, errors.length, look.mix.keep.error)))
  if (stale && ctx.random() < 0.4) await dismissError(ctx, stale)
}

/** Git totals move as soon as a script that wrote files has finished. */
async function refreshGitAfterWrites(ctx: ActivityContext, look: Look): Promise<void> {
  for (const track of look.inState('idle').filter((t) => t.wrote && look.free(t)).slice(0, 2)) await refreshGit(ctx, track)
}

/** Tops up the (at most two) states furthest below their share, then sends one more script for churn. */
async function keepTheMix(ctx: ActivityContext, look: Look): Promise<void> {
  const { tracks, mix } = look
  const errors = look.inState('error').length
  // An idle row, or an error shown long enough that a new script may replace it.
  const available = () => tracks.filter((t) => look.free(t) && (t.state === 'idle' || (t.state === 'error' && look.mayClear(t, errors, mix.keep.error))))
  // A row counts as what its last script leads to until it gets there.
  const shown = (kind: ShownKind) => tracks.filter((t) => (t.expect ?? t.state) === kind).length
  const deficits = SHOWN_KINDS.map((kind) => ({ kind, missing: mix.targets[kind] - shown(kind) }))
    .filter((d) => d.missing > 0)
    .sort((a, b) => b.missing - a.missing)
  for (const short of deficits.slice(0, 2)) {
    const row = ctx.pick(available().filter((t) => t.state === 'idle'))
    if (row) await sendScript(ctx, row, SCRIPT_FOR[short.kind])
  }
  const churn = ctx.pick(available())
  if (churn && ctx.random() < 0.7) await sendScript(ctx, churn, weighted(CHURN, ctx.random))
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
