import { useCallback, useRef, useState, type FocusEvent } from 'react'
import { holdOrder, type HeldOrder } from './order-hold.ts'

/**
 * The displayed order of the switcher: `fresh` while `holding` is false; while it is true, the
 * order displayed when the hold began (see holdOrder). `restartKey` (the chosen order) applies the
 * fresh order at once when it changes: the user asked for a new order. `applyNow` does the same on
 * request ("N changes — re-sort") and keeps holding from there.
 */
export function useHeldOrder(fresh: readonly string[], holding: boolean, restartKey: unknown): HeldOrder & { applyNow: () => void } {
  const held = useRef<string[] | null>(null)
  const key = useRef(restartKey)
  const [, rerender] = useState(0)
  if (!holding || key.current !== restartKey) held.current = null
  key.current = restartKey
  const shown = holdOrder(holding ? (held.current ?? fresh) : null, fresh)
  // holdOrder is a fixpoint on its own output, so writing it back during render is idempotent.
  held.current = holding ? shown.ids : null
  const applyNow = useCallback(() => {
    held.current = null
    rerender((n) => n + 1)
  }, [])
  return { ...shown, applyNow }
}

/** Handlers for the element the user aims at: hovered by a pointer, or holding keyboard focus. */
export interface AimHandlers {
  onPointerEnter: () => void
  onPointerLeave: () => void
  onFocus: (e: FocusEvent<HTMLElement>) => void
  onBlur: (e: FocusEvent<HTMLElement>) => void
}

/**
 * True while a pointer is over the element or keyboard focus is inside it. Focus a mouse click
 * leaves on a row does not count (it is not :focus-visible): the pointer that clicked holds the
 * order while it stays, and once it leaves nothing is being aimed at.
 */
export function useAiming(): { aiming: boolean; handlers: AimHandlers } {
  const [pointer, setPointer] = useState(false)
  const [keyboard, setKeyboard] = useState(false)
  const handlers: AimHandlers = {
    onPointerEnter: () => setPointer(true),
    onPointerLeave: () => setPointer(false),
    onFocus: (e) => setKeyboard(focusVisible(e.target)),
    onBlur: (e) => {
      if (!(e.relatedTarget instanceof Node && e.currentTarget.contains(e.relatedTarget))) setKeyboard(false)
    },
  }
  return { aiming: pointer || keyboard, handlers }
}

function focusVisible(element: Element): boolean {
  try {
    return element.matches(':focus-visible')
  } catch {
    return true // a browser without :focus-visible: any focus holds
  }
}
