// PeriodicSweep on an injected clock: one timer for every member, each visited once a period.
import { describe, expect, it } from 'vitest'
import { PeriodicSweep } from '../../src/util/periodic-sweep.ts'
import { manualTimers } from '../support/manual-timers.ts'

const clock = manualTimers

const rethrow = (error: unknown) => {
  throw error
}

describe('PeriodicSweep', () => {
  it('visits each member once a period, the first time between 7/8 of a period and a period after it joined, on one timer', () => {
    const c = clock()
    const visits: { member: string; at: number }[] = []
    const sweep = new PeriodicSweep<string>(800, (member) => visits.push({ member, at: c.now }), c.timers, rethrow)
    sweep.add('a')
    c.advance(300)
    sweep.add('b')
    for (let i = 0; i < 10; i++) sweep.add(`m${i}`) // joined together, visited together
    expect(c.pendingCount).toBe(1)
    c.advance(3 * 800)
    const of = (m: string) => visits.filter((v) => v.member === m).map((v) => v.at)
    expect(of('a')).toEqual([800, 1600, 2400])
    expect(of('b')[0]! - 300).toBeGreaterThanOrEqual(700)
    expect(of('b')[0]! - 300).toBeLessThanOrEqual(800)
    expect(of('b')[1]! - of('b')[0]!).toBe(800)
    for (let i = 0; i < 10; i++) expect(of(`m${i}`)).toEqual(of('b'))
  })

  it('a deleted member is visited no more, and the timer stops with the last one', () => {
    const c = clock()
    const visited: string[] = []
    const sweep = new PeriodicSweep<string>(800, (m) => visited.push(m), c.timers, rethrow)
    sweep.add('a')
    sweep.add('b')
    sweep.delete('a')
    c.advance(800)
    expect(visited).toEqual(['b'])
    sweep.delete('b')
    expect(sweep.size).toBe(0)
    expect(c.pendingCount).toBe(0)
    sweep.add('c')
    c.advance(800)
    expect(visited).toEqual(['b', 'c'])
    sweep.clear()
    expect(c.pendingCount).toBe(0)
  })

  it('a member may delete itself during its visit; a visit that throws is reported and the others are visited all the same', () => {
    const c = clock()
    const visited: string[] = []
    const errors: unknown[] = []
    const sweep: PeriodicSweep<string> = new PeriodicSweep<string>(
      800,
      (m) => {
        visited.push(m)
        if (m === 'leaver') sweep.delete(m)
        if (m === 'thrower') throw new Error('boom')
      },
      c.timers,
      (error) => errors.push(error),
    )
    for (const m of ['leaver', 'thrower', 'after']) sweep.add(m)
    c.advance(1600)
    expect(visited).toEqual(['leaver', 'thrower', 'after', 'thrower', 'after'])
    expect(errors).toHaveLength(2)
    expect(sweep.size).toBe(2)
  })
})
