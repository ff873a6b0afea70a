import { describe, expect, it } from 'vitest'
import { holdOrder } from '../../src/web/order-hold.ts'

const ids = (s: string) => (s === '' ? [] : s.split(''))

describe('holdOrder: rows never move under the pointer', () => {
  it.each([
    { name: 'nothing held: the fresh order', held: null, fresh: 'abcd', shown: 'abcd', changes: 0 },
    { name: 'held and nothing changed', held: 'abcd', fresh: 'abcd', shown: 'abcd', changes: 0 },
    { name: 'a row re-sorted to the top stays in place', held: 'abcd', fresh: 'dabc', shown: 'abcd', changes: 1 },
    { name: 'the bottom half re-sorted to the top stays in place', held: 'abcdef', fresh: 'defabc', shown: 'abcdef', changes: 3 },
    { name: 'the whole list reversed', held: 'abcd', fresh: 'dcba', shown: 'abcd', changes: 3 },
    { name: 'a new row goes to the end, whatever its fresh place', held: 'abc', fresh: 'xabc', shown: 'abcx', changes: 1 },
    { name: 'a new row already last in the fresh order is no change', held: 'abc', fresh: 'abcx', shown: 'abcx', changes: 0 },
    { name: 'new rows keep their fresh order among themselves', held: 'ab', fresh: 'yaxb', shown: 'abyx', changes: 2 },
    { name: 'a deleted row leaves (the rows below close the gap)', held: 'abcd', fresh: 'acd', shown: 'acd', changes: 0 },
    { name: 'a deleted row while others re-sorted', held: 'abcd', fresh: 'dca', shown: 'acd', changes: 2 },
    { name: 'every row deleted', held: 'abc', fresh: '', shown: '', changes: 0 },
    { name: 'an empty hold gains rows in fresh order', held: '', fresh: 'ba', shown: 'ba', changes: 0 },
  ])('$name', ({ held, fresh, shown, changes }) => {
    const result = holdOrder(held === null ? null : ids(held), ids(fresh))
    expect(result.ids.join('')).toBe(shown)
    expect(result.changes).toBe(changes)
    // A fixpoint: holding what it displays displays it again (the hook writes it back every render).
    expect(holdOrder(result.ids, ids(fresh)).ids).toEqual(result.ids)
  })

  it('a changed row keeps its place through successive re-sorts, then the fresh order applies when the hold ends', () => {
    let shown = holdOrder(ids('abcde'), ids('eabcd')).ids
    shown = holdOrder(shown, ids('deabc')).ids
    shown = holdOrder(shown, ids('cdeab')).ids
    expect(shown.join('')).toBe('abcde')
    expect(holdOrder(null, ids('cdeab')).ids.join('')).toBe('cdeab')
  })
})
