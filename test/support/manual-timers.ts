import type { Scheduler } from '../../src/util/scheduler.ts'

/** Timers (the Scheduler interface) that move only when the test says so. */
export function manualTimers() {
  let now = 0
  let nextId = 0
  const pending = new Map<number, { at: number; fn: () => void }>()
  const timers: Scheduler = {
    setTimeout(fn, ms) {
      pending.set(++nextId, { at: now + ms, fn })
      return nextId
    },
    clearTimeout: (id) => void pending.delete(id as number),
  }
  /** Moves the clock by `ms`, firing every timer due on the way in order, those set meanwhile included. */
  const advance = (ms: number) => {
    const until = now + ms
    for (;;) {
      const next = [...pending].filter(([, t]) => t.at <= until).sort(([, a], [, b]) => a.at - b.at)[0]
      if (!next) break
      pending.delete(next[0])
      now = next[1].at
      next[1].fn()
    }
    now = until
  }
  return {
    timers,
    advance,
    get now() {
      return now
    },
    /** Timers set and not yet fired or cleared. */
    get pendingCount() {
      return pending.size
    },
  }
}
