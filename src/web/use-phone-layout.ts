import { useSyncExternalStore } from 'react'

const PHONE = '(max-width: 720px)'

/** True below the phone breakpoint: the switcher becomes a sheet instead of a sidebar. */
export function usePhoneLayout(): boolean {
  return useSyncExternalStore(
    (onChange) => {
      const query = window.matchMedia(PHONE)
      query.addEventListener('change', onChange)
      return () => query.removeEventListener('change', onChange)
    },
    () => window.matchMedia(PHONE).matches,
  )
}
