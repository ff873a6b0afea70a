import { useSyncExternalStore } from 'react'

/**
 * One clock for every relative time on the page ("waiting 5 min"): a single timer, started by the
 * first subscriber and stopped with the last, ticks at each wall-clock minute, so every badge shows
 * the same tick and a page with 500 rows still has one timer.
 */
let now = Date.now()
const listeners = new Set<() => void>()
let timer: ReturnType<typeof setTimeout> | null = null

function schedule() {
  timer = setTimeout(() => {
    now = Date.now()
    for (const listener of listeners) listener()
    schedule()
  }, 60_000 - (Date.now() % 60_000))
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener)
  if (timer === null) {
    now = Date.now()
    schedule()
  }
  return () => {
    listeners.delete(listener)
    if (listeners.size === 0 && timer !== null) {
      clearTimeout(timer)
      timer = null
    }
  }
}

/** The time of the page's latest minute tick (epoch milliseconds). */
export function useMinuteClock(): number {
  return useSyncExternalStore(subscribe, () => now)
}
