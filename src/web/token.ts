/** The token is pasted once (or arrives as `#token=` from `npm run demo`) and kept in localStorage. */
const KEY = 'task-status.token'

export function takeTokenFromLocation(location: Location, history: History): string | null {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash)
  if (!match?.[1]) return null
  const token = decodeURIComponent(match[1])
  // Off the address bar at once, so it is neither bookmarked nor shared by copying the URL.
  history.replaceState(null, '', location.pathname + location.search)
  return token
}

export function storedToken(storage: Storage): string | null {
  return storage.getItem(KEY)
}

export function storeToken(storage: Storage, token: string | null): void {
  if (token) storage.setItem(KEY, token)
  else storage.removeItem(KEY)
}
