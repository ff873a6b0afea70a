import type { ChildProcess } from 'node:child_process'
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

  it('counts capacity by what items weigh: one heavy item fills it as its parts would have', async () => {
    const handoff = new BoundedHandoff<{ parts: number }>(10, (item) => item.parts)
    handoff.push({ parts: 4 })
    handoff.push({ parts: 7 })
    expect(handoff.size).toBe(11)
    expect(handoff.highWater).toBe(11)
    let room = false
    const released = handoff.waitForSpace().then(() => (room = true))
    await new Promise((r) => setImmediate(r))
    expect(room).toBe(false) // 11 of 10 although only two items: the producer waits
    const items = handoff.drain()
    expect((await items.next()).value).toEqual({ parts: 4 })
    await released
    expect(handoff.size).toBe(7) // room again
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

describe('backpressure from the handoff to a real agent process', () => {
  it('stops reading a noisy agent while its handoff is full, drops nothing, and stop() cancels it', async () => {
    const { pino } = await import('pino')
    const { AgentProcess, HANDOFF_CAPACITY } = await import('../../src/agents/agent-process.ts')
    const { MOCK_PROFILE } = await import('../../src/agents/profiles.ts')
    const { eventually } = await import('../support/wait.ts')
    const agent = await AgentProcess.launch({ profile: MOCK_PROFILE, cwd: process.cwd(), logger: pino({ level: 'silent' }) })
    const turn = agent.prompt(JSON.stringify({ script: [{ stream: { kind: 'message', count: 30000 } }] }))
    // Nobody consumes: the queue fills to its capacity (plus at most the lines of one read).
    await eventually(() => agent.handoff.size >= HANDOFF_CAPACITY)
    // No time given to run away: wait until reading has stopped for good, i.e. the agent's stdout
    // buffers a full highWaterMark nobody takes (the pipe behind it fills, the agent's writes block).
    // An unthrottled reader keeps that buffer empty, and this wait fails at its deadline.
    const stdout = (agent as unknown as { child: ChildProcess }).child.stdout!
    await eventually(() => stdout.readableLength >= stdout.readableHighWaterMark, 20_000)
    const readWhileFull = agent.handoff.size
    expect(readWhileFull).toBeLessThan(HANDOFF_CAPACITY + 1000)

    let text = ''
    for await (const input of agent.handoff.drain()) {
      if (input.type === 'update' && input.notification.update.sessionUpdate === 'agent_message_chunk') {
        const content = input.notification.update.content
        if (content.type === 'text') text += content.text
      }
      if (text.endsWith('29999;')) break
    }
    await turn
    let expected = ''
    for (let i = 0; i < 30000; i++) expected += `${i};`
    expect(text === expected).toBe(true)
    expect(agent.handoff.highWater).toBeLessThan(HANDOFF_CAPACITY + 1000)

    // A second flood that nobody reads: stop() still returns, cancelling the blocked reader.
    void agent.prompt(JSON.stringify({ script: [{ stream: { kind: 'message', count: 30000 } }] })).catch(() => undefined)
    await eventually(() => agent.handoff.size >= HANDOFF_CAPACITY)
    await agent.stop()
    expect(agent.stopping).toBe(true)
  })
})
