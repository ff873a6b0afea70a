import type { GraphQLCall } from './graphql.ts'
import type { Random } from './scripts.ts'
import type { DemoTask } from './seed.ts'
import { ActivityContext, type DemoActivityStats } from './activity-context.ts'
import { mixFor, tracksOf, type Mix, type Track } from './activity-rows.ts'
import { kickOff, tick } from './activity-tick.ts'

export type { DemoActivityStats } from './activity-context.ts'

export interface DemoActivityOptions {
  graphqlUrl: string
  /** A member of the tasks' workspace (the seeded user's token). */
  token: string
  /** Tasks without a session stay idle. */
  tasks: readonly DemoTask[]
  /**
   * The folder the sessions' mock agents take their scripts from (their MOCK_AGENT_SCRIPTS; a
   * BundledMock's scriptDir): the prompts the activity sends are sentences, the scripts wait there.
   */
  scriptDir: string
  /** Every choice (scripts, which row, how long a request waits) comes from here; Math.random by default. */
  random?: Random
  /** Time between two looks at the workspace (2.5 s by default): each look acts on a few rows. */
  intervalMs?: number
  /** Where failures (and rate-limit pauses) are reported; console.warn by default. Nothing is ever thrown. */
  log?: (message: string) => void
}

export interface DemoActivity {
  /** Stops the loop and waits for the requests in flight; afterwards the activity sends nothing. Idempotent. */
  stop(): Promise<void>
  readonly stats: Readonly<DemoActivityStats>
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
  const intervalMs = options.intervalMs ?? 2_500
  const call: GraphQLCall = { graphqlUrl: options.graphqlUrl, token: options.token, timeoutMs: 15_000 }
  const log = options.log ?? ((message: string) => console.warn(`[demo] ${message}`))
  const ctx = new ActivityContext(call, options.random ?? Math.random, intervalMs, log, options.scriptDir)
  const tracks = tracksOf(options.tasks)
  const waiting = new Wait()
  const loop = runLoop(ctx, tracks, mixFor(tracks.length, intervalMs), waiting).catch((error: unknown) => ctx.failed('activity', error))

  let stopping: Promise<void> | undefined
  return {
    stats: ctx.stats,
    stop: () =>
      (stopping ??= (async () => {
        ctx.stopped = true
        waiting.wake()
        await loop
      })()),
  }
}

/** The pause between two looks, which stop() cuts short. */
class Wait {
  #wake: (() => void) | undefined

  for(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      this.#wake = () => {
        clearTimeout(timer)
        resolve()
      }
    }).finally(() => (this.#wake = undefined))
  }

  wake(): void {
    this.#wake?.()
  }
}

/** Kicks the mix off, then looks at the workspace every interval until stopped (skipping looks while rate limited). */
async function runLoop(ctx: ActivityContext, tracks: readonly Track[], mix: Mix, waiting: Wait): Promise<void> {
  if (tracks.length === 0) return
  await kickOff(ctx, tracks, mix)
  while (!ctx.stopped) {
    await waiting.for(ctx.intervalMs)
    if (ctx.stopped) break
    if (ctx.paused) continue
    try {
      await tick(ctx, tracks, mix)
    } catch (error) {
      ctx.failed('activity tick', error) // a bug of ours must not end the demo either
    }
  }
}
