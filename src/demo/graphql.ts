/**
 * The demo's GraphQL-over-HTTP client: the public API only, a bearer token, no globals. A refusal
 * becomes a DemoApiError carrying the error's `extensions.code` (and `retryAfterMs` when rate
 * limited), so callers can decide to wait, skip or give up.
 */
export class DemoApiError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly retryAfterMs?: number,
  ) {
    super(message)
    this.name = 'DemoApiError'
  }
}

interface GraphQLResponse<T> {
  data?: T | null
  errors?: { message: string; extensions?: { code?: string; retryAfterMs?: number } }[]
}

export interface GraphQLCall {
  graphqlUrl: string
  token: string
  /** Per request; a hung request fails instead of holding the caller forever. */
  timeoutMs?: number
}

/** One operation; resolves with `data`, or rejects with DemoApiError (GraphQL errors, HTTP failures, timeouts). */
export async function graphql<T>(call: GraphQLCall, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  let response: Response
  try {
    response = await fetch(call.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${call.token}` },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(call.timeoutMs ?? 20_000),
    })
  } catch (error) {
    throw new DemoApiError(`request failed: ${(error as Error).message}`, 'NETWORK')
  }
  let body: GraphQLResponse<T>
  try {
    body = (await response.json()) as GraphQLResponse<T>
  } catch {
    throw new DemoApiError(`HTTP ${response.status} without a JSON body`, response.status === 503 ? 'UNAVAILABLE' : 'NETWORK')
  }
  const first = body.errors?.[0]
  if (first) throw new DemoApiError(first.message, first.extensions?.code, first.extensions?.retryAfterMs)
  if (!body.data) throw new DemoApiError(`HTTP ${response.status} without data`, 'NETWORK')
  return body.data
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Like graphql(), retrying what waiting can fix (not ready yet, rate limited, a dropped connection). */
export async function graphqlWithRetry<T>(call: GraphQLCall, query: string, variables: Record<string, unknown> = {}, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await graphql<T>(call, query, variables)
    } catch (error) {
      const retryable = error instanceof DemoApiError && ['UNAVAILABLE', 'RATE_LIMITED', 'NETWORK'].includes(error.code ?? '')
      if (!retryable || attempt >= attempts) throw error
      await sleep(Math.min(5_000, error.retryAfterMs ?? 100 * 2 ** attempt))
    }
  }
}

/** Runs `work` over `items` with at most `limit` in flight; every result, in order (like Promise.allSettled). */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      try {
        results[index] = { status: 'fulfilled', value: await work(items[index] as T, index) }
      } catch (reason) {
        results[index] = { status: 'rejected', reason }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
  return results
}

export function errorText(error: unknown): string {
  if (error instanceof DemoApiError) return `${error.code ?? 'ERROR'}: ${error.message}`
  return error instanceof Error ? error.message : String(error)
}
