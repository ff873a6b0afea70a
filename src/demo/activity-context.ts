import { DemoApiError, errorText, type GraphQLCall } from './graphql.ts'
import type { Random } from './scripts.ts'

export interface DemoActivityStats {
  ticks: number
  scriptsSent: number
  permissionsAnswered: number
  clarificationsAnswered: number
  errorsDismissed: number
  gitRefreshes: number
  failures: number
}

/**
 * What every part of the demo activity shares: the API call, the random source (every choice
 * comes from it, in a fixed order, so a seeded run repeats), the counters, and the failure policy:
 * nothing is ever thrown, a RATE_LIMITED answer pauses the loop for its retryAfterMs.
 */
export class ActivityContext {
  readonly stats: DemoActivityStats = { ticks: 0, scriptsSent: 0, permissionsAnswered: 0, clarificationsAnswered: 0, errorsDismissed: 0, gitRefreshes: 0, failures: 0 }
  stopped = false
  /** Rate limited: no request goes out before this time. */
  pausedUntil = 0

  constructor(
    readonly call: GraphQLCall,
    readonly random: Random,
    /** Time between two looks at the workspace. */
    readonly intervalMs: number,
    private readonly log: (message: string) => void,
    /** Where the mock agents take their scripts (MOCK_AGENT_SCRIPTS, src/agents/mock/script-drop.ts). */
    readonly scriptDir: string,
  ) {}

  get paused(): boolean {
    return Date.now() < this.pausedUntil
  }

  pick<T>(items: readonly T[]): T | undefined {
    return items.length ? items[Math.floor(this.random() * items.length) % items.length] : undefined
  }

  between(min: number, max: number): number {
    return Math.round(min + this.random() * (max - min))
  }

  failed(what: string, error: unknown): void {
    if (this.stopped && error instanceof DemoApiError && error.code === 'NETWORK') return // the server went first
    this.stats.failures++
    if (error instanceof DemoApiError && error.code === 'RATE_LIMITED') {
      this.pausedUntil = Math.max(this.pausedUntil, Date.now() + (error.retryAfterMs ?? 5_000))
      this.log(`${what}: rate limited; pausing the activity for ${Math.ceil((error.retryAfterMs ?? 5_000) / 1000)} s`)
      return
    }
    this.log(`${what} failed: ${errorText(error)}`)
  }

  /** Runs one API action; a failure is logged and reported as false, never thrown. */
  async attempt(what: string, action: () => Promise<unknown>): Promise<boolean> {
    if (this.stopped || this.paused) return false
    try {
      await action()
      return true
    } catch (error) {
      this.failed(what, error)
      return false
    }
  }
}
