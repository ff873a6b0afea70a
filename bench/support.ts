// Shared plumbing of the benchmarks: byte-counting graphql-ws clients and a forked server process.
import { fork, type ChildProcess } from 'node:child_process'
import { TYPESCRIPT_EXEC_ARGV } from './runtime.ts'
import { createClient, type Client } from 'graphql-ws'
import { WebSocket } from 'ws'

export interface Tally {
  bytes: number
  frames: number
  lastFrameAt: number
}

/** A graphql-ws client whose socket counts every byte and frame it receives (what a browser would download). */
export function countingClient(url: string, token: string): { client: Client; tally: Tally } {
  const tally: Tally = { bytes: 0, frames: 0, lastFrameAt: 0 }
  class CountingSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols)
      this.on('message', (data: Buffer) => {
        tally.bytes += data.length
        tally.frames++
        tally.lastFrameAt = performance.now()
      })
    }
  }
  const client = createClient({ url, webSocketImpl: CountingSocket, connectionParams: { authorization: `Bearer ${token}` }, lazy: false })
  return { client, tally }
}

/**
 * Runs `moduleUrl` again as a child with `server` as its argument and --expose-gc, so the server's
 * heap is measured apart from the client's allocations; `reply()` takes the child's next message.
 */
export function forkServer<FromServer>(moduleUrl: string): { child: ChildProcess; reply: () => Promise<FromServer> } {
  const child = fork(moduleUrl, ['server'], { execArgv: ['--expose-gc', ...TYPESCRIPT_EXEC_ARGV] })
  const replies: FromServer[] = []
  let wake: (() => void) | undefined
  child.on('message', (message: FromServer) => {
    replies.push(message)
    wake?.()
  })
  const reply = async () => {
    while (replies.length === 0) await new Promise<void>((resolve) => (wake = resolve))
    return replies.shift()!
  }
  return { child, reply }
}

/** GraphQL over HTTP as `token`: the data and the response's size in bytes; errors throw. */
export async function httpGql<T>(url: string, token: string, query: string, variables: Record<string, unknown> = {}): Promise<{ data: T; bytes: number }> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  })
  const raw = Buffer.from(await response.arrayBuffer())
  const body = JSON.parse(raw.toString('utf8')) as { data?: T; errors?: unknown[] }
  if (body.errors?.length || !body.data) throw new Error(`${response.status} ${JSON.stringify(body.errors)}`)
  return { data: body.data, bytes: raw.length }
}

/** Nearest-rank quantile of the samples (one of them; NaN when there are none). */
export const quantile = (samples: number[], q: number): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN
}

export const median = (samples: number[]) => quantile(samples, 0.5)

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
