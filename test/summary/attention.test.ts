// The attention fields (v1.3): waitingSince, queuedPromptCount, interruption, and the stored
// NEEDS_ATTENTION position derived from a payload. One row per rule.
import { describe, expect, it } from 'vitest'
import { attentionOrder } from '../../src/summary/attention.ts'
import { deriveSummary } from '../../src/summary/derive.ts'
import type { SessionObservation } from '../../src/summary/inputs.ts'
import { validateSummary } from '../../src/summary/semantic.ts'
import type { SummaryPayload } from '../../src/summary/types.ts'
import { at, clarification, inputs, iso, payload, permission, reservation, session, turn } from './builders.ts'

const derive = (sessions: SessionObservation[]) => {
  const summary = deriveSummary(inputs({ sessions }))
  validateSummary(summary)
  return summary
}

describe('waitingSince: the creation time of the request behind pendingAction', () => {
  it.each<{ name: string; sessions: SessionObservation[]; pending: SummaryPayload['pendingAction']; since: string | null }>([
    { name: 'nothing pending → null', sessions: [session({ state: 'RUNNING', recentTurns: [turn('t1', 1)] })], pending: null, since: null },
    {
      name: 'a permission in the current turn → its creation time',
      sessions: [session({ state: 'RUNNING', recentTurns: [turn('t1', 1)], pendingRequests: [permission('t1', { createdAt: at(4) })] })],
      pending: 'PERMISSION',
      since: iso(4),
    },
    {
      name: 'a clarification in the current turn → its creation time',
      sessions: [session({ state: 'WAITING_FOR_INPUT', recentTurns: [turn('t1', 1)], pendingRequests: [clarification('t1', { createdAt: at(6) })] })],
      pending: 'CLARIFICATION',
      since: iso(6),
    },
    {
      name: 'permission outranks an older clarification: the permission’s time, not the clarification’s',
      sessions: [
        session({ id: 'a', state: 'RUNNING', recentTurns: [turn('ta', 1)], pendingRequests: [clarification('ta', { createdAt: at(2) })] }),
        session({ id: 'b', state: 'RUNNING', recentTurns: [turn('tb', 1)], pendingRequests: [permission('tb', { createdAt: at(9) })] }),
      ],
      pending: 'PERMISSION',
      since: iso(9),
    },
    {
      name: 'permissions in two sessions → the oldest one',
      sessions: [
        session({ id: 'a', state: 'RUNNING', recentTurns: [turn('ta', 1)], pendingRequests: [permission('ta', { createdAt: at(7) })] }),
        session({ id: 'b', state: 'RUNNING', recentTurns: [turn('tb', 1)], pendingRequests: [permission('tb', { createdAt: at(3) })] }),
      ],
      pending: 'PERMISSION',
      since: iso(3),
    },
    {
      name: 'a pending row of an older turn does not arm, and gives no time',
      sessions: [
        session({ state: 'RUNNING', recentTurns: [turn('t2', 5), turn('t1', 1)], pendingRequests: [permission('t1', { createdAt: at(2) })] }),
      ],
      pending: null,
      since: null,
    },
    {
      name: 'an unattempted reservation does not move the boundary: the request still counts, with its time',
      sessions: [
        session({
          state: 'RUNNING',
          recentTurns: [reservation('r', 5), turn('t1', 1)],
          pendingRequests: [clarification('t1', { createdAt: at(3) })],
        }),
      ],
      pending: 'CLARIFICATION',
      since: iso(3),
    },
    {
      name: 'a request of a stopped session counts for nothing',
      sessions: [session({ state: 'CANCELLED', recentTurns: [turn('t1', 1)], pendingRequests: [permission('t1', { createdAt: at(2) })] })],
      pending: null,
      since: null,
    },
    {
      name: 'an answered request gives no time',
      sessions: [
        session({ state: 'RUNNING', recentTurns: [turn('t1', 1)], pendingRequests: [permission('t1', { status: 'APPROVED', createdAt: at(2) })] }),
      ],
      pending: null,
      since: null,
    },
  ])('$name', ({ sessions, pending, since }) => {
    const summary = derive(sessions)
    expect(summary.pendingAction).toBe(pending)
    expect(summary.waitingSince).toBe(since)
  })
})

describe('queuedPromptCount: prompts accepted behind an open turn, not yet dispatched', () => {
  it.each<{ name: string; sessions: SessionObservation[]; count: number }>([
    { name: 'no sessions → 0', sessions: [], count: 0 },
    { name: 'a session with nothing queued → 0', sessions: [session({ state: 'RUNNING' })], count: 0 },
    { name: 'one session with two queued → 2', sessions: [session({ state: 'RUNNING', queuedPrompts: 2 })], count: 2 },
    {
      name: 'summed over the task’s sessions, whatever their state',
      sessions: [
        session({ id: 'a', state: 'RUNNING', queuedPrompts: 2 }),
        session({ id: 'b', state: 'WAITING_FOR_INPUT', queuedPrompts: 1 }),
        session({ id: 'c', state: 'CANCELLED', queuedPrompts: 0 }),
      ],
      count: 3,
    },
    { name: 'a negative count read from storage counts as none', sessions: [session({ queuedPrompts: -1 })], count: 0 },
  ])('$name', ({ sessions, count }) => {
    expect(derive(sessions).queuedPromptCount).toBe(count)
  })
})

describe('interruption: the primary session’s mark of a turn the server cut off', () => {
  // The mark is set by recovery and takeover and cleared in the store by the next dispatched turn
  // (a queued prompt too) or resumeSession (test/recovery/queued-prompts.test.ts,
  // test/api/attention-live.test.ts); derivation only carries the primary session's mark.
  const cut = (reason: 'SERVER_RESTART' | 'OWNER_LOST', minutes: number) => ({ reason, at: at(minutes) })
  it.each<{ name: string; sessions: SessionObservation[]; interruption: SummaryPayload['interruption'] }>([
    { name: 'no sessions → null', sessions: [], interruption: null },
    {
      name: 'a primary session marked by startup recovery → SERVER_RESTART at the cut',
      sessions: [session({ id: 'p', isPrimary: true, state: 'WAITING_FOR_INPUT', interruption: cut('SERVER_RESTART', 9) })],
      interruption: { sessionId: 'p', reason: 'SERVER_RESTART', at: iso(9) },
    },
    {
      name: 'a primary session marked by a takeover → OWNER_LOST',
      sessions: [session({ id: 'p', isPrimary: true, state: 'FAILED', interruption: cut('OWNER_LOST', 5) })],
      interruption: { sessionId: 'p', reason: 'OWNER_LOST', at: iso(5) },
    },
    {
      name: 'a marked primary session carries its mark whatever its turns say (the store clears it at the next dispatch)',
      sessions: [
        session({
          id: 'p',
          isPrimary: true,
          state: 'RUNNING',
          interruption: cut('SERVER_RESTART', 5),
          recentTurns: [turn('queued', 4, { promptDispatchAttempted: true }), turn('boot', 6, { lifecycleOnly: true })],
        }),
      ],
      interruption: { sessionId: 'p', reason: 'SERVER_RESTART', at: iso(5) },
    },
    {
      name: 'an unmarked primary session (the user prompted or resumed since) → null, whatever its turns',
      sessions: [session({ id: 'p', isPrimary: true, state: 'CANCELLED', recentTurns: [turn('t1', 1)] })],
      interruption: null,
    },
    {
      name: 'only the primary session counts: a marked side session → null',
      sessions: [
        session({ id: 'p', isPrimary: true, createdAt: at(0) }),
        session({ id: 'side', createdAt: at(3), interruption: cut('SERVER_RESTART', 4) }),
      ],
      interruption: null,
    },
    {
      name: 'without a primary flag the newest session is primary (after deleteSession): its own mark',
      sessions: [
        session({ id: 'older', createdAt: at(0), interruption: cut('OWNER_LOST', 3) }),
        session({ id: 'newer', createdAt: at(2), interruption: cut('SERVER_RESTART', 4) }),
      ],
      interruption: { sessionId: 'newer', reason: 'SERVER_RESTART', at: iso(4) },
    },
    {
      name: 'the primary session deleted: an unmarked successor → null',
      sessions: [session({ id: 'next', createdAt: at(2), recentTurns: [turn('tn', 2)] })],
      interruption: null,
    },
  ])('$name', ({ sessions, interruption }) => {
    expect(derive(sessions).interruption).toEqual(interruption)
  })
})

describe('attentionOrder: the stored NEEDS_ATTENTION position of a payload', () => {
  const quiet = { pendingAction: null, waitingSince: null, activeError: null } as const
  it.each<{ name: string; p: SummaryPayload; order: { rank: number; key: number } }>([
    { name: 'waiting on the user → rank 0 by waitingSince ascending', p: payload({ waitingSince: iso(8) }), order: { rank: 0, key: at(8).getTime() } },
    { name: 'an activeError, nothing pending → rank 1, newest activity first', p: payload({ pendingAction: null, waitingSince: null }), order: { rank: 1, key: -at(10).getTime() } },
    { name: 'the rest → rank 2, newest activity first', p: payload({ ...quiet }), order: { rank: 2, key: -at(10).getTime() } },
    { name: 'no activity time at all → rank 2, key 0', p: payload({ ...quiet, lastActivityAt: null }), order: { rank: 2, key: 0 } },
    { name: 'queued prompts or an interruption alone do not rank', p: payload({ ...quiet, queuedPromptCount: 4 }), order: { rank: 2, key: -at(10).getTime() } },
  ])('$name', ({ p, order }) => {
    expect(attentionOrder(p)).toEqual(order)
  })

  it('orders a table of payloads as NEEDS_ATTENTION says', () => {
    const rows = [
      { id: 'rest-old', p: payload({ ...quiet, lastActivityAt: iso(1) }) },
      { id: 'error-new', p: payload({ pendingAction: null, waitingSince: null, lastActivityAt: iso(9) }) },
      { id: 'waiting-late', p: payload({ waitingSince: iso(7) }) },
      { id: 'rest-new', p: payload({ ...quiet, lastActivityAt: iso(5) }) },
      { id: 'waiting-early', p: payload({ pendingAction: 'CLARIFICATION', waitingSince: iso(2) }) },
      { id: 'error-old', p: payload({ pendingAction: null, waitingSince: null, lastActivityAt: iso(3) }) },
    ]
    const sorted = rows
      .map((r) => ({ id: r.id, ...attentionOrder(r.p) }))
      .sort((a, b) => a.rank - b.rank || a.key - b.key || (a.id < b.id ? 1 : -1))
      .map((r) => r.id)
    expect(sorted).toEqual(['waiting-early', 'waiting-late', 'error-new', 'error-old', 'rest-new', 'rest-old'])
  })
})
