// A session's messages rebuilt from its stream as the SDK follows it: each MessageAdded whole,
// then each MessageUpdated's `append` applied where its offset continues the text held. Shared by
// the real-agent tests and bench/real-agents.ts (which also reads when each append arrived).

/** The part of a `sessionEvents` event the rebuild reads. */
export interface StreamEvent {
  __typename: string
  message?: { id: string; content?: string; author?: string; kind?: string }
  append?: { offset: number; text: string } | null
}

export interface Rebuilt {
  texts: Map<string, string>
  /** Appends whose offset did not continue the text held (a gap in what the subscriber received). */
  gaps: number
  /** Appends to a message no MessageAdded started (or one `keep` left out). */
  orphans: number
  /** Per message: how many appends arrived (a gap's too), and when the first and last did. */
  appends: Map<string, { count: number; first: number; last: number }>
}

/**
 * Rebuilds the texts of the messages `keep` accepts (default: all) from `events` in arrival
 * order; `at` is an event's arrival time (0 when not recorded).
 */
export function rebuildFromAppends(
  events: Iterable<{ event: StreamEvent | undefined; at?: number }>,
  keep: (message: NonNullable<StreamEvent['message']>) => boolean = () => true,
): Rebuilt {
  const texts = new Map<string, string>()
  const appends = new Map<string, { count: number; first: number; last: number }>()
  let gaps = 0
  let orphans = 0
  for (const { event, at = 0 } of events) {
    if (!event?.message) continue
    const { message } = event
    if (event.__typename === 'MessageAdded' && keep(message)) texts.set(message.id, message.content ?? '')
    if (event.__typename !== 'MessageUpdated' || !event.append) continue
    const text = texts.get(message.id)
    if (text === undefined) {
      orphans++
      continue
    }
    if (event.append.offset !== text.length) gaps++
    else texts.set(message.id, text + event.append.text)
    const seen = appends.get(message.id) ?? { count: 0, first: at, last: at }
    seen.count++
    seen.last = at
    appends.set(message.id, seen)
  }
  return { texts, gaps, orphans, appends }
}
