// An agent's own words for why something failed: the JSON-RPC error it answered with (a model
// provider's refusal, a launch it refused) or, when it said nothing over ACP, the end of what it
// printed on stderr before it exited. Bounded: they are stored, shown and logged.
import type { Readable } from 'node:stream'
import { RequestError } from '@agentclientprotocol/sdk'
import { PREVIEW_MAX_BYTES, truncateUtf8 } from '../summary/bounds.ts'

/** The tail of stderr kept while an agent starts (the contract: the last 2 KiB). */
export const STDERR_TAIL_BYTES = 2048
/** A launch error's reason: the agent's message and details, or its stderr tail, with room for both. */
export const LAUNCH_REASON_MAX_BYTES = 4096

/**
 * The last bytes an agent wrote on stderr, kept only until `stop()` (its launch succeeded): after
 * that stderr is drained unread, since a working agent may echo transcript content there.
 */
export class StderrTail {
  #tail = Buffer.alloc(0)
  #keeping = true

  constructor(stream: Readable) {
    stream.on('data', (chunk: Buffer) => {
      if (!this.#keeping) return
      const joined = Buffer.concat([this.#tail, chunk])
      this.#tail = joined.subarray(Math.max(0, joined.length - STDERR_TAIL_BYTES))
    })
    // An agent that writes a lot to stderr must never block on a full pipe.
    stream.resume()
  }

  stop(): void {
    this.#keeping = false
    this.#tail = Buffer.alloc(0)
  }

  /** The kept tail as text, trimmed (a character the cut split is dropped); empty when the agent printed nothing. */
  text(): string {
    const text = this.#tail.toString('utf8').replace(/^\uFFFD+/, '')
    return text.trim()
  }
}

/** The agent's message plus whatever text its error data carries (details, message, a string), once each. */
export function requestErrorText(error: RequestError): string {
  const parts = [error.message]
  const data = error.data as unknown
  if (typeof data === 'string') parts.push(data)
  else if (data && typeof data === 'object') {
    for (const key of ['details', 'message', 'error'] as const) {
      const value = (data as Record<string, unknown>)[key]
      if (typeof value === 'string') parts.push(value)
      else if (value && typeof value === 'object' && typeof (value as { message?: unknown }).message === 'string')
        parts.push((value as { message: string }).message)
    }
  }
  const unique = parts.map((p) => p.trim()).filter((p, i, all) => p.length > 0 && all.indexOf(p) === i)
  return unique.join(': ')
}

/**
 * A prompt the agent answered with an error: its reason as the user should read it, at most 512
 * bytes. A rate limit or an overload says so first, whatever words the provider used.
 */
export function agentErrorReason(error: RequestError): string {
  const text = requestErrorText(error) || `Agent error ${error.code}.`
  const label = /\b429\b|rate[ _-]?limit/i.test(text)
    ? 'Rate limited by the model provider'
    : /\b529\b|overloaded/i.test(text)
      ? 'The model provider is overloaded'
      : undefined
  return truncateUtf8(label ? `${label}: ${text}` : text, PREVIEW_MAX_BYTES)
}

/** Why a launch failed, in the agent's words: its JSON-RPC error, else its stderr tail, else what the server saw. */
export function launchFailureReason(what: string, error: unknown, stderr: string): string {
  const said = error instanceof RequestError ? requestErrorText(error) : ''
  const parts = [what, said, stderr && `stderr: ${stderr}`].filter((p) => p.length > 0)
  return truncateUtf8(parts.join(' — '), LAUNCH_REASON_MAX_BYTES)
}
