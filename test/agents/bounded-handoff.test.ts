import { describe, expect, it } from 'vitest'
import { BoundedHandoff } from '../../src/agents/bounded-handoff.ts'

describe('BoundedHandoff', () => {
  it('holds the producer while full and releases it as the consumer catches up, dropping nothing', async () => {
    const handoff = new BoundedHandoff<number>(3)
    const produced: number[] = []
    const producer = (async () => {
      for (let i = 0; i < 10; i++) {
        await handoff.waitForSpace()
        handoff.push(i)
        produced.push(i)
      }
      handoff.close()
    })()
    await new Promise((r) => setImmediate(r))
    expect(produced).toEqual([0, 1, 2]) // full: the producer waits, nothing was dropped
    const consumed: number[] = []
    for await (const item of handoff.drain()) consumed.push(item)
    await producer
    expect(consumed).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(handoff.highWater).toBe(3)
  })

  it('close() releases a waiting producer and ends the consumer after the items already queued', async () => {
    const handoff = new BoundedHandoff<string>(1)
    handoff.push('a')
    const waiting = handoff.waitForSpace()
    handoff.close()
    expect(await waiting).toBe(false)
    const items: string[] = []
    for await (const item of handoff.drain()) items.push(item)
    expect(items).toEqual(['a'])
    handoff.push('late')
    expect(handoff.size).toBe(0)
  })
})
