import { useCallback, useEffect, useRef, useState } from 'react'

/** A refusal as the page shows it: the server's code (BAD_USER_INPUT, FORBIDDEN, CONFLICT, ...) and its message. */
export interface ActionError {
  code: string
  message: string
}

function toActionError(error: unknown): ActionError {
  const code = error && typeof error === 'object' && 'code' in error && typeof error.code === 'string' ? error.code : 'ERROR'
  const message = error && typeof error === 'object' && 'message' in error ? String(error.message) : String(error)
  return { code, message }
}

/**
 * One form's call to the API: `busy` while it runs, and its refusal kept for display. `run`
 * resolves with the result, or undefined when it failed (the error is in `error`); it never rejects,
 * so a failed call changes nothing but the error text.
 */
export function useAction() {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<ActionError | null>(null)
  const mounted = useRef(true)
  useEffect(() => {
    mounted.current = true
    return () => {
      mounted.current = false
    }
  }, [])
  const run = useCallback(async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true)
    setError(null)
    try {
      return await work()
    } catch (e) {
      if (mounted.current) setError(toActionError(e))
      return undefined
    } finally {
      if (mounted.current) setBusy(false)
    }
  }, [])
  return { busy, error, run, clearError: useCallback(() => setError(null), []) }
}
