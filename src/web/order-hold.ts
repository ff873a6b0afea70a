/**
 * Rows that never move under the pointer. While the user aims at the switcher, the rows keep the
 * positions they had when the hold began: a changed row updates in place, a deleted row leaves (the
 * rows below it close the gap: a row that no longer exists cannot keep its place), and a new row is
 * added at the end, the one place where it shifts no other row (at the top it would push every row
 * down under the pointer). The fresh order applies when the hold ends, or on request.
 */
export interface HeldOrder {
  /** The ids to display, in display order. */
  ids: string[]
  /**
   * How many rows would move if the fresh order applied now: the fewest rows to take out and put
   * back elsewhere (the rows outside a longest run already in fresh order). 0: nothing is held back.
   */
  changes: number
}

/**
 * `held`: the ids displayed so far (null while nothing is held); `fresh`: every current id, in the
 * chosen order. Pure, and a fixpoint: holdOrder(holdOrder(h, f).ids, f) gives the same ids.
 */
export function holdOrder(held: readonly string[] | null, fresh: readonly string[]): HeldOrder {
  if (held === null) return { ids: [...fresh], changes: 0 }
  const current = new Set(fresh)
  const kept = held.filter((id) => current.has(id))
  const keptSet = new Set(kept)
  const ids = [...kept, ...fresh.filter((id) => !keptSet.has(id))]
  return { ids, changes: rowsOutOfOrder(ids, fresh) }
}

/** ids.length minus the longest increasing run of fresh positions (patience sorting, n log n). */
function rowsOutOfOrder(ids: readonly string[], fresh: readonly string[]): number {
  const position = new Map(fresh.map((id, i) => [id, i]))
  const tails: number[] = []
  for (const id of ids) {
    const p = position.get(id)!
    let lo = 0
    let hi = tails.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (tails[mid]! < p) lo = mid + 1
      else hi = mid
    }
    tails[lo] = p
  }
  return ids.length - tails.length
}
