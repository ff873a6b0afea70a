import { createHash, randomBytes } from 'node:crypto'

/** Tokens are 256 random bits; only their SHA-256 is stored, so a database leak reveals no usable token. */
export function generateToken(): string {
  return `tss_${randomBytes(32).toString('base64url')}`
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

/** Accepts `Bearer <token>` (any case of the scheme) and returns the token, or undefined. */
export function bearerToken(header: string | null | undefined): string | undefined {
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return match?.[1]
}
