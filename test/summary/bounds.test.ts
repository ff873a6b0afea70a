import { describe, expect, it } from 'vitest'
import {
  boundRecoveryActions,
  CATEGORY_MAX_BYTES,
  MAX_RECOVERY_ACTIONS,
  PREVIEW_MAX_BYTES,
  truncateUtf8,
} from '../../src/summary/bounds.ts'
import { ascii, isWellFormed, utf8Bytes } from './builders.ts'

describe('bounds constants', () => {
  it('match the spec: 512-byte preview, 64-byte category, three actions', () => {
    expect([PREVIEW_MAX_BYTES, CATEGORY_MAX_BYTES, MAX_RECOVERY_ACTIONS]).toEqual([512, 64, 3])
  })
})

describe('truncateUtf8', () => {
  it.each([
    { name: 'empty string', text: '', max: 10, expected: '' },
    { name: 'shorter than the bound', text: 'abc', max: 10, expected: 'abc' },
    { name: 'exactly the bound', text: 'abcde', max: 5, expected: 'abcde' },
    { name: 'one byte over', text: 'abcdef', max: 5, expected: 'abcde' },
    { name: 'bound zero', text: 'abc', max: 0, expected: '' },
    { name: 'bound zero, empty text', text: '', max: 0, expected: '' },
    { name: 'é (2 bytes) fits exactly', text: 'aé', max: 3, expected: 'aé' },
    { name: 'é straddling the bound is dropped', text: 'aaé', max: 3, expected: 'aa' },
    { name: 'é alone with bound 1 → empty', text: 'é', max: 1, expected: '' },
    { name: '€ (3 bytes) straddling by 1', text: 'a€', max: 3, expected: 'a' },
    { name: '€ (3 bytes) straddling by 2', text: 'aa€', max: 3, expected: 'aa' },
    { name: '€ fits exactly', text: '€b', max: 3, expected: '€' },
    { name: 'emoji (4 bytes) straddling by 1', text: 'abc😀', max: 6, expected: 'abc' },
    { name: 'emoji straddling by 3', text: 'a😀', max: 4, expected: 'a' },
    { name: 'emoji fits exactly', text: 'ab😀c', max: 6, expected: 'ab😀' },
    { name: 'emoji alone with bound 3 → empty', text: '😀', max: 3, expected: '' },
    { name: 'run of emoji, odd bound', text: '😀😀😀', max: 11, expected: '😀😀' },
    { name: 'mixed widths', text: 'aé€😀z', max: 9, expected: 'aé€' },
    { name: 'mixed widths, all fit', text: 'aé€😀z', max: 11, expected: 'aé€😀z' },
    { name: 'combining accent is its own code point', text: 'ae\u0301x', max: 4, expected: 'ae\u0301' },
    { name: '512-byte preview bound, 2-byte straddle', text: ascii(511) + 'é', max: 512, expected: ascii(511) },
    { name: '64-byte category bound, 4-byte straddle', text: ascii(61) + '😀', max: 64, expected: ascii(61) },
  ])('$name', ({ text, max, expected }) => {
    const result = truncateUtf8(text, max)
    expect(result).toBe(expected)
    expect(utf8Bytes(result)).toBeLessThanOrEqual(max)
    expect(isWellFormed(result)).toBe(true)
    expect(text.startsWith(result)).toBe(true)
  })

  it('never splits a surrogate pair at any bound', () => {
    const text = 'x😀é€😀y'
    for (let max = 0; max <= utf8Bytes(text) + 1; max++) {
      const result = truncateUtf8(text, max)
      expect(isWellFormed(result), `max=${max}`).toBe(true)
      expect(utf8Bytes(result), `max=${max}`).toBeLessThanOrEqual(max)
      // Maximal: the next code point would not have fit.
      const next = [...text.slice(result.length)][0]
      if (next !== undefined) expect(utf8Bytes(result + next), `max=${max}`).toBeGreaterThan(max)
    }
  })
})

describe('boundRecoveryActions', () => {
  it.each<{ name: string; values: unknown[]; expected: string[] }>([
    { name: 'empty', values: [], expected: [] },
    { name: 'one known', values: ['RESUME_SESSION'], expected: ['RESUME_SESSION'] },
    {
      name: 'exactly three known, order kept',
      values: ['MARK_REVIEW_DONE', 'RETRY_DEFAULT', 'PICK_BASE_BRANCH'],
      expected: ['MARK_REVIEW_DONE', 'RETRY_DEFAULT', 'PICK_BASE_BRANCH'],
    },
    {
      name: 'four known → first three',
      values: ['RESUME_SESSION', 'MARK_REVIEW_DONE', 'RETRY_DEFAULT', 'PICK_BASE_BRANCH'],
      expected: ['RESUME_SESSION', 'MARK_REVIEW_DONE', 'RETRY_DEFAULT'],
    },
    { name: 'duplicates removed', values: ['RETRY_DEFAULT', 'RETRY_DEFAULT'], expected: ['RETRY_DEFAULT'] },
    {
      name: 'duplicate after others keeps first position',
      values: ['PICK_BASE_BRANCH', 'RETRY_DEFAULT', 'PICK_BASE_BRANCH'],
      expected: ['PICK_BASE_BRANCH', 'RETRY_DEFAULT'],
    },
    { name: 'unknown values dropped', values: ['NUKE', 'RETRY_DEFAULT', 'RETRY'], expected: ['RETRY_DEFAULT'] },
    { name: 'case matters', values: ['retry_default', 'Retry_Default'], expected: [] },
    {
      name: 'non-strings dropped',
      values: [null, undefined, 1, true, {}, ['RETRY_DEFAULT'], 'MARK_REVIEW_DONE'],
      expected: ['MARK_REVIEW_DONE'],
    },
    {
      name: 'unknown and duplicates do not use up slots',
      values: ['X', 'RETRY_DEFAULT', 'X', 'RETRY_DEFAULT', 'Y', 'PICK_BASE_BRANCH', 'RESUME_SESSION', 'MARK_REVIEW_DONE'],
      expected: ['RETRY_DEFAULT', 'PICK_BASE_BRANCH', 'RESUME_SESSION'],
    },
    { name: 'only unknown', values: ['A', 'B', 'C', 'D'], expected: [] },
  ])('$name', ({ values, expected }) => {
    const result = boundRecoveryActions(values)
    expect(result).toEqual(expected)
    expect(result.length).toBeLessThanOrEqual(3)
    expect(new Set(result).size).toBe(result.length)
  })

  it('does not mutate its input', () => {
    const values = ['RETRY_DEFAULT', 'RETRY_DEFAULT', 'X']
    boundRecoveryActions(values)
    expect(values).toEqual(['RETRY_DEFAULT', 'RETRY_DEFAULT', 'X'])
  })
})
