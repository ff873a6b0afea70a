import { createHmac } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { ByteBudget } from './body-budget.ts'
import { signatureMatches } from './signature.ts'

export type BodyRead =
  /** Complete, and X-Hub-Signature-256 matches it. */
  | { kind: 'body'; body: Buffer }
  /** Complete, and the signature does not match (or is missing): the bytes are dropped unassembled. */
  | { kind: 'bad-signature' }
  /** Larger than the per-body limit (declared or as sent). */
  | { kind: 'too-large' }
  /** The shared budget of unverified bytes has no room for it: try again later. */
  | { kind: 'busy' }
  /** The client went away (or the stream failed) before the body was complete: nothing to answer. */
  | { kind: 'aborted' }

export interface BodyLimits {
  maxBodyBytes: number
  budget: ByteBudget
}

const declaredLength = (req: IncomingMessage): number | undefined => {
  const header = req.headers['content-length']
  return header === undefined || !/^\d+$/.test(header) ? undefined : Number(header)
}

/**
 * Reads a webhook body, streamed, while its bytes fit both the per-body limit and the shared
 * budget of unverified bytes, and verifies X-Hub-Signature-256 on the bytes as they come (the
 * HMAC is complete when the body is); only a body whose signature matches is assembled and
 * returned. A declared Content-Length is checked and reserved before a byte is read, so a body
 * that cannot fit is refused at once; a chunked body reserves as it grows. On a refusal the bytes
 * read so far are dropped and the rest of the body is read into nothing as it arrives: closing
 * the connection on unread data would make the kernel reset it, and the sender could lose the
 * answer (413 / 503) before reading it. The reservation is released on every path (complete,
 * refused, error, client gone); a verified body is GitHub's, and the caller's to hold.
 */
export function readSignedBody(req: IncomingMessage, secret: string, signature: string | undefined, limits: BodyLimits): Promise<BodyRead> {
  const { maxBodyBytes, budget } = limits
  const declared = declaredLength(req)
  if (declared !== undefined && declared > maxBodyBytes) return Promise.resolve(discard(req, { kind: 'too-large' }))
  let reserved = 0
  if (declared !== undefined) {
    if (!budget.tryTake(declared)) return Promise.resolve(discard(req, { kind: 'busy' }))
    reserved = declared
  }
  const hmac = createHmac('sha256', secret)
  const chunks: Buffer[] = []
  let size = 0

  return new Promise<BodyRead>((resolve) => {
    let settled = false
    const settle = (result: BodyRead) => {
      if (settled) return
      settled = true
      budget.release(reserved)
      reserved = 0
      chunks.length = 0
      // The error listener stays: an error after this is the client's and must not go unhandled.
      req.off('data', onData).off('end', onEnd).off('close', onClose)
      // Refused: keep the stream flowing into nothing, so the rest is discarded, not buffered.
      if (result.kind === 'too-large' || result.kind === 'busy') discard(req, result)
      resolve(result)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBodyBytes) return settle({ kind: 'too-large' })
      if (size > reserved) {
        if (!budget.tryTake(size - reserved)) return settle({ kind: 'busy' })
        reserved = size
      }
      hmac.update(chunk)
      chunks.push(chunk)
    }
    const onEnd = () =>
      settle(signatureMatches(hmac.digest('hex'), signature) ? { kind: 'body', body: Buffer.concat(chunks, size) } : { kind: 'bad-signature' })
    const onGone = () => settle({ kind: 'aborted' })
    // 'close' before 'end' is a client that disconnected mid-body.
    const onClose = () => {
      if (!req.complete) onGone()
    }
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('close', onClose)
  })
}

/** Lets the rest of a refused body flow into nothing (an error then is the client's, and ignored). */
function discard(req: IncomingMessage, result: BodyRead): BodyRead {
  req.on('error', () => {})
  req.resume()
  return result
}
