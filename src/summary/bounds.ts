import { RECOVERY_ACTIONS, type RecoveryAction } from './types.ts'

export const PREVIEW_MAX_BYTES = 512
export const CATEGORY_MAX_BYTES = 64
export const MAX_RECOVERY_ACTIONS = 3

/** Cuts to at most `maxBytes` of UTF-8 without splitting a character (code point). */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text
  let bytes = 0
  let end = 0
  for (const char of text) {
    const size = Buffer.byteLength(char, 'utf8')
    if (bytes + size > maxBytes) break
    bytes += size
    end += char.length
  }
  return text.slice(0, end)
}

const KNOWN = new Set<string>(RECOVERY_ACTIONS)

/** Known values only, de-duplicated, order kept, at most three. */
export function boundRecoveryActions(values: readonly unknown[]): RecoveryAction[] {
  const result: RecoveryAction[] = []
  for (const value of values) {
    if (typeof value !== 'string' || !KNOWN.has(value) || result.includes(value as RecoveryAction)) continue
    result.push(value as RecoveryAction)
    if (result.length === MAX_RECOVERY_ACTIONS) break
  }
  return result
}
