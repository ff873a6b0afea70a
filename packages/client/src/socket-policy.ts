/**
 * Where the SDK's socket goes and how it is kept: the URL, the keepalive, and when and how soon a
 * lost socket is opened again. Pure values and functions, shared by the transport and the requests.
 */

/** Close codes after which retrying cannot help: the token is refused. */
export const FATAL_CLOSE_CODES: ReadonlySet<number> = new Set([4401, 4403])
/** The client pings this often (graphql-ws `ping`); a pong missing after PONG_TIMEOUT_MS ends the socket. */
export const KEEPALIVE_MS = 15_000
export const PONG_TIMEOUT_MS = 5_000
/** A connection that lived this long resets the backoff. */
export const STABLE_CONNECTION_MS = 10_000

/** Jittered exponential backoff: min(30 s, 500 ms · 2^attempt) · (0.5 + random()). */
export function backoffMs(attempt: number, random: () => number): number {
  return Math.round(Math.min(30_000, 500 * 2 ** attempt) * (0.5 + random()))
}

/** ws:// or wss:// for a ws(s) or http(s) URL. */
export function toWebSocketUrl(url: string): string {
  const parsed = new URL(url)
  if (parsed.protocol === 'http:') parsed.protocol = 'ws:'
  else if (parsed.protocol === 'https:') parsed.protocol = 'wss:'
  else if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') throw new Error(`Unsupported URL scheme: ${parsed.protocol}`)
  return parsed.href
}
