import { setImmediate as nextMacrotask } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { CoalescingRunner } from '../../src/projector/coalescing-runner.ts'

describe('CoalescingRunner', () => {
  it('starts a run in a later macrotask: the requesting code finishes its own microtasks first, and requests meanwhile collapse into that run', async () => {
    const runs: string[] = []
    const runner = new CoalescingRunner<string>(async (key) => void runs.push(key))
    const done = runner.request('a')
    // Synchronously resolving work (what a better-sqlite3 statement is) does not reach the job.
    for (let i = 0; i < 100; i++) await Promise.resolve()
    expect(runs).toEqual([])
    void runner.request('a')
    await done
    expect(runs).toEqual(['a'])
    await runner.idle()
    expect(runs).toEqual(['a'])
  })

  it('a request during a run still gets one follow-up run; idle waits for it', async () => {
    const runs: number[] = []
    let release!: () => void
    const runner = new CoalescingRunner<string>(async () => {
      runs.push(runs.length)
      if (runs.length === 1) await new Promise<void>((resolve) => (release = resolve))
    })
    void runner.request('a')
    await nextMacrotask()
    expect(runs).toEqual([0])
    void runner.request('a')
    void runner.request('a')
    release()
    await runner.idle()
    expect(runs).toEqual([0, 1])
  })
})
