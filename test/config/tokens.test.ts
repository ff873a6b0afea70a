import { describe, expect, it } from 'vitest'
import { bearerToken, generateToken, hashToken } from '../../src/auth/tokens.ts'

describe('tokens', () => {
  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['  Bearer   abc  ', 'abc'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    [undefined, undefined],
  ])('reads the token of %j', (header, token) => {
    expect(bearerToken(header)).toBe(token)
  })

  it('generates distinct tokens and hashes them irreversibly', () => {
    const a = generateToken()
    expect(a).not.toBe(generateToken())
    expect(hashToken(a)).toMatch(/^[0-9a-f]{64}$/)
    expect(hashToken(a)).toBe(hashToken(a))
    expect(hashToken(a)).not.toContain(a)
  })
})
