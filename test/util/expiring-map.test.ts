import { describe, expect, it } from 'vitest'
import { ExpiringMap } from '../../src/util/expiring-map.ts'

describe('ExpiringMap', () => {
  const make = (max = 3) => {
    let now = 0
    const map = new ExpiringMap<string, number>({ ttlMs: 100, max, now: () => now })
    return { map, advance: (ms: number) => (now += ms) }
  }

  it('keeps a value until ttlMs after it was set, then drops it', () => {
    const { map, advance } = make()
    map.set('a', 1)
    advance(99)
    expect(map.get('a')).toBe(1)
    advance(1)
    expect(map.get('a')).toBeUndefined()
    expect(map.size).toBe(0)
  })

  it('setting again restarts the entry’s time', () => {
    const { map, advance } = make()
    map.set('a', 1)
    advance(80)
    map.set('a', 2)
    advance(80)
    expect(map.get('a')).toBe(2)
  })

  it('full, it drops the oldest set entry first', () => {
    const { map } = make(2)
    map.set('a', 1)
    map.set('b', 2)
    map.set('a', 3) // now the newest
    map.set('c', 4)
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([3, undefined, 4])
    expect(map.size).toBe(2)
  })

  it('delete, deleteWhere and clear drop entries whatever their time', () => {
    const { map } = make(5)
    for (const [k, v] of [['a', 1], ['b', 2], ['c', 3], ['d', 4]] as const) map.set(k, v)
    map.delete('a')
    map.deleteWhere((value, key) => value % 2 === 0 || key === 'x')
    expect([map.get('a'), map.get('b'), map.get('c'), map.get('d')]).toEqual([undefined, undefined, 3, undefined])
    map.clear()
    expect(map.size).toBe(0)
  })
})
