// Plumbing of bench/real-agents.ts: its own documents, bounded waits and the ~1 MiB mixed text it streams.
import { WAIT_MS } from './real-agents-results.ts'


export async function until<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, ms = WAIT_MS, every = 25): Promise<T> {
  const deadline = performance.now() + ms
  let last: unknown
  for (;;) {
    last = await probe()
    if (last !== undefined && last !== false) return last as T
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, every))
  }
}

export const withDeadline = <T>(what: string, promise: Promise<T>, ms = WAIT_MS): Promise<T> => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
  ])
}


/**
 * ~1 MiB of mixed text: lines of one fixed length in UTF-16 code units (so a mock chunk of whole
 * lines never cuts a surrogate pair), with 2-byte (é ü ï), 3-byte (€ — ✓) and 4-byte (😀)
 * characters, a tab, quotes, a backslash, and every seventh line followed by an empty one.
 */
export function mixedText(targetBytes: number): { text: string; lines: number; lineUnits: number } {
  const words = ['alpha', 'bravo', 'gamma', 'delta', 'omega', 'sigma', 'kappa']
  const line = (i: number) =>
    `${String(i).padStart(6, '0')} ${words[i % 7]} Grüße café 5 € 😀 naïve — "q" \\ \t✓ ${words[(i * 3) % 7]}${i % 7 === 6 ? '\n\n' : '\n '}`
  const bytesPerLine = Buffer.byteLength(line(0))
  const lines = Math.floor(targetBytes / bytesPerLine)
  const parts: string[] = []
  for (let i = 0; i < lines; i++) parts.push(line(i))
  return { text: parts.join(''), lines, lineUnits: line(0).length }
}

/** How many chunks the mock cuts `text` into (its split: equal UTF-16 slices): at least `want`, never inside a surrogate pair. */
export function mockChunks(text: string, lines: number, want: number): number {
  for (let n = Math.max(want, lines); n >= lines; n = n === lines ? lines - 1 : Math.max(lines, Math.floor(n * 0.9))) {
    const size = Math.ceil(text.length / n)
    let clean = true
    for (let at = size; at < text.length && clean; at += size) {
      const unit = text.charCodeAt(at)
      if (unit >= 0xdc00 && unit <= 0xdfff) clean = false
    }
    if (clean) return n
    if (n === lines) break
  }
  return lines
}

// --- The bench's own documents (the test's generated ones where they fit) ---

/** Every field of the summary, so each revision's change can be named. */
export const WORKSPACE_EVENTS = /* GraphQL */ `
  subscription BenchWorkspaceEvents($workspaceId: ID!) {
    workspaceEvents(workspaceId: $workspaceId) {
      __typename
      ... on TaskUpserted { task { id } }
      ... on TaskStatusSummaryUpdated {
        taskId
        summary {
          revision
          lastActivityAt
          primarySession { id state }
          foregroundActivity
          activeSubagentCount
          pendingAction
          waitingSince
          queuedPromptCount
          interruption { reason }
          activeError { category preview }
          git { additions deletions changedFiles ahead behind comparisonUnavailable }
          pullRequest { count }
        }
      }
    }
  }`

/** What "settled" needs, without the transcript (a 1 MiB message is not re-read every poll). */
export const SESSION_STATE = /* GraphQL */ `
  query BenchSessionState($id: ID!) {
    session(id: $id) {
      state
      turns(last: 100) { lifecycleOnly completedAt stopReason }
      error { code message }
    }
  }`

export interface SessionState {
  session: { state: string; turns: { lifecycleOnly: boolean; completedAt: string | null; stopReason: string | null }[]; error: { code: string; message: string } | null }
}

export type Summary = {
  revision: number
  lastActivityAt: string | null
  primarySession: { id: string; state: string } | null
  foregroundActivity: string | null
  activeSubagentCount: number
  pendingAction: string | null
  waitingSince: string | null
  queuedPromptCount: number
  interruption: { reason: string } | null
  activeError: { category: string; preview: string } | null
  git: Record<string, unknown> | null
  pullRequest: { count: number } | null
}
