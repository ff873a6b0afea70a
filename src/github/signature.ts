import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * X-Hub-Signature-256: `sha256=` + hex HMAC-SHA256 of the raw body, compared in constant time.
 * The caller computes the HMAC (as the body streams in, read-body.ts).
 */
export function signatureMatches(expectedHex: string, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false
  const expected = Buffer.from(expectedHex, 'utf8')
  const given = Buffer.from(header.slice('sha256='.length), 'utf8')
  return given.length === expected.length && timingSafeEqual(given, expected)
}

export function sign(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}
