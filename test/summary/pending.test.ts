import { describe, expect, it } from 'vitest'
import type { SessionObservation, TurnObservation } from '../../src/summary/inputs.ts'
import {
  currentAuthoritativeTurn,
  decidesAlone,
  isAuthoritativeTurn,
  sessionPendingAction,
  taskPending,
  taskPendingAction,
} from '../../src/summary/pending.ts'
import type { SessionState, SummaryPayload } from '../../src/summary/types.ts'
import { deriveSummary } from '../../src/summary/derive.ts'
import { validateSummary } from '../../src/summary/semantic.ts'
import { clarification, inputs, permission, queuedPrompt, reservation, session, turn } from './builders.ts'

type Pending = SummaryPayload['pendingAction']

describe('isAuthoritativeTurn', () => {
  it.each([
    { name: 'an ordinary turn', t: turn('t', 0), expected: true },
    { name: 'an ordinary turn without messages', t: turn('t', 0, { hasMessages: false }), expected: true },
    { name: 'an empty, unattempted reservation', t: reservation('t', 0), expected: false },
    { name: 'a message-backed reservation', t: reservation('t', 0, { hasMessages: true }), expected: true },
    { name: 'an attempted reservation', t: reservation('t', 0, { promptDispatchAttempted: true }), expected: true },
    { name: 'a queued prompt (accepted behind an open turn, never dispatched), for a permission', t: queuedPrompt('t', 0), expected: false },
    {
      name: 'an attempted, message-backed reservation',
      t: reservation('t', 0, { promptDispatchAttempted: true, hasMessages: true }),
      expected: true,
    },
  ])('$name → $expected', ({ t, expected }) => {
    expect(isAuthoritativeTurn(t)).toBe(expected)
  })
})

describe('currentAuthoritativeTurn', () => {
  it.each([
    { name: 'no turns', turns: [], expected: undefined },
    { name: 'only an empty reservation', turns: [reservation('r', 5)], expected: undefined },
    { name: 'the newest turn', turns: [turn('new', 5), turn('old', 1)], expected: 'new' },
    { name: 'the newest turn even when listed oldest first', turns: [turn('old', 1), turn('new', 5)], expected: 'new' },
    { name: 'skips a newer empty reservation', turns: [reservation('r', 9), turn('old', 1)], expected: 'old' },
    {
      name: 'a newer message-backed reservation',
      turns: [reservation('r', 9, { hasMessages: true }), turn('old', 1)],
      expected: 'r',
    },
    {
      name: 'a newer attempted reservation',
      turns: [reservation('r', 9, { promptDispatchAttempted: true }), turn('old', 1)],
      expected: 'r',
    },
    { name: 'skips a newer lifecycle-only turn (agent relaunch)', turns: [turn('boot', 9, { lifecycleOnly: true }), turn('user', 5)], expected: 'user' },
    { name: 'only lifecycle-only turns', turns: [turn('boot', 9, { lifecycleOnly: true })], expected: undefined },
    {
      name: 'a lifecycle-only turn with the same start does not win the tie',
      turns: [turn('zz-boot', 5, { lifecycleOnly: true }), turn('aa-user', 5)],
      expected: 'aa-user',
    },
    { name: 'same start: the greater id (deterministic)', turns: [turn('a', 5), turn('b', 5)], expected: 'b' },
    { name: 'same start, reversed input', turns: [turn('b', 5), turn('a', 5)], expected: 'b' },
  ])('$name → $expected', ({ turns, expected }) => {
    expect(currentAuthoritativeTurn(session({ recentTurns: turns }))?.id).toBe(expected)
  })

  it('does not reorder the session’s own turn list', () => {
    const turns = [turn('old', 1), turn('new', 5)]
    currentAuthoritativeTurn(session({ recentTurns: turns }))
    expect(turns.map((t) => t.id)).toEqual(['old', 'new'])
  })
})

/** A RUNNING session with one ordinary current turn `t1`, unless overridden. */
const live = (overrides: Partial<SessionObservation> = {}) =>
  session({ state: 'RUNNING', recentTurns: [turn('t1', 1)], ...overrides })

describe('isAuthoritativeTurn for a clarification (spec: a message-backed reservation is authoritative, dispatched or not)', () => {
  it.each([
    { name: 'a queued prompt (it holds the user message)', t: queuedPrompt('t', 0), expected: true },
    { name: 'an empty, unattempted reservation', t: reservation('t', 0), expected: false },
    { name: 'an ordinary turn', t: turn('t', 0), expected: true },
  ])('$name → $expected', ({ t, expected }) => {
    expect(isAuthoritativeTurn(t, 'CLARIFICATION')).toBe(expected)
  })
})

describe('sessionPendingAction', () => {
  it.each<{ name: string; s: SessionObservation; expected: Pending }>([
    { name: 'nothing pending', s: live(), expected: null },
    { name: 'a pending permission in the current turn', s: live({ pendingRequests: [permission('t1')] }), expected: 'PERMISSION' },
    {
      name: 'a pending permission behind queued prompts (they never reached the agent)',
      s: live({ recentTurns: [turn('t1', 0), queuedPrompt('q1', 1), queuedPrompt('q2', 2)], pendingRequests: [permission('t1')] }),
      expected: 'PERMISSION',
    },
    {
      name: 'a pending clarification behind a queued prompt: the user wrote since, a newer authoritative turn supersedes it',
      s: live({ recentTurns: [turn('t1', 0), queuedPrompt('q1', 1)], pendingRequests: [clarification('t1')] }),
      expected: null,
    },
    {
      name: 'a permission and a clarification behind a queued prompt: the permission still waits on its answer',
      s: live({ recentTurns: [turn('t1', 0), queuedPrompt('q1', 1)], pendingRequests: [clarification('t1'), permission('t1')] }),
      expected: 'PERMISSION',
    },
    {
      name: 'a pending clarification in the current turn',
      s: live({ pendingRequests: [clarification('t1')] }),
      expected: 'CLARIFICATION',
    },
    {
      name: 'permission outranks clarification (clarification listed first)',
      s: live({ pendingRequests: [clarification('t1'), permission('t1')] }),
      expected: 'PERMISSION',
    },
    {
      name: 'permission outranks clarification (permission listed first)',
      s: live({ pendingRequests: [permission('t1'), clarification('t1')] }),
      expected: 'PERMISSION',
    },
    // Session state gate
    ...(['RUNNING', 'WAITING_FOR_INPUT'] as SessionState[]).map((state) => ({
      name: `${state} session contributes`,
      s: live({ state, pendingRequests: [permission('t1')] }),
      expected: 'PERMISSION' as Pending,
    })),
    ...(['CREATED', 'STARTING', 'IDLE', 'COMPLETED', 'FAILED', 'CANCELLED'] as SessionState[]).map((state) => ({
      name: `${state} session does not contribute`,
      s: live({ state, pendingRequests: [permission('t1'), clarification('t1')] }),
      expected: null as Pending,
    })),
    // Authoritative-turn boundary
    {
      name: 'an empty unattempted reservation does not advance the boundary (previous turn still counts)',
      s: live({ recentTurns: [reservation('r2', 5), turn('t1', 1)], pendingRequests: [clarification('t1')] }),
      expected: 'CLARIFICATION',
    },
    {
      name: 'an empty unattempted reservation keeps a previous-turn permission',
      s: live({ recentTurns: [reservation('r2', 5), turn('t1', 1)], pendingRequests: [permission('t1')] }),
      expected: 'PERMISSION',
    },
    {
      name: 'a message-backed reservation advances the boundary (older rows no longer count)',
      s: live({
        recentTurns: [reservation('r2', 5, { hasMessages: true }), turn('t1', 1)],
        pendingRequests: [clarification('t1'), permission('t1')],
      }),
      expected: null,
    },
    {
      name: 'an attempted reservation advances the boundary (older rows no longer count)',
      s: live({
        recentTurns: [reservation('r2', 5, { promptDispatchAttempted: true }), turn('t1', 1)],
        pendingRequests: [clarification('t1'), permission('t1')],
      }),
      expected: null,
    },
    {
      name: 'a row in the message-backed reservation itself arms',
      s: live({
        recentTurns: [reservation('r2', 5, { hasMessages: true }), turn('t1', 1)],
        pendingRequests: [clarification('r2')],
      }),
      expected: 'CLARIFICATION',
    },
    {
      name: 'a row in a non-authoritative reservation does not arm',
      s: live({ recentTurns: [reservation('r2', 5), turn('t1', 1)], pendingRequests: [permission('r2')] }),
      expected: null,
    },
    {
      name: 'a relaunch turn recorded after the user’s turn keeps the user’s permission pending',
      s: live({ recentTurns: [turn('boot', 5, { lifecycleOnly: true }), turn('t1', 1)], pendingRequests: [permission('t1')] }),
      expected: 'PERMISSION',
    },
    {
      name: 'a relaunch turn recorded before the user’s turn keeps the user’s clarification pending',
      s: live({ recentTurns: [turn('t1', 5), turn('boot', 1, { lifecycleOnly: true })], pendingRequests: [clarification('t1')] }),
      expected: 'CLARIFICATION',
    },
    {
      name: 'a row in a lifecycle-only turn does not arm',
      s: live({ recentTurns: [turn('boot', 5, { lifecycleOnly: true })], pendingRequests: [permission('boot')] }),
      expected: null,
    },
    {
      name: 'a newer authoritative turn supersedes older pending rows',
      s: live({ recentTurns: [turn('t2', 5), turn('t1', 1)], pendingRequests: [permission('t1'), clarification('t1')] }),
      expected: null,
    },
    {
      name: 'a newer authoritative turn supersedes even when turns are listed oldest first',
      s: live({ recentTurns: [turn('t1', 1), turn('t2', 5)], pendingRequests: [permission('t1')] }),
      expected: null,
    },
    {
      name: 'only the current turn’s rows arm when both turns have rows',
      s: live({ recentTurns: [turn('t2', 5), turn('t1', 1)], pendingRequests: [permission('t1'), clarification('t2')] }),
      expected: 'CLARIFICATION',
    },
    {
      name: 'no authoritative turn at all → nothing arms',
      s: live({ recentTurns: [reservation('r1', 1)], pendingRequests: [permission('r1')] }),
      expected: null,
    },
    { name: 'no turns at all → nothing arms', s: live({ recentTurns: [], pendingRequests: [permission(null)] }), expected: null },
    // Row-level gates
    ...['ANSWERED', 'COMPLETED', 'CANCELLED', 'pending', '', null].map((status) => ({
      name: `a row with status ${JSON.stringify(status)} does not arm`,
      s: live({ pendingRequests: [permission('t1', { status }), clarification('t1', { status })] }),
      expected: null as Pending,
    })),
    { name: 'a row with turnId null does not arm', s: live({ pendingRequests: [permission(null)] }), expected: null },
    {
      name: 'a row of a turn outside the window does not arm',
      s: live({ pendingRequests: [permission('t0'), clarification('elsewhere')] }),
      expected: null,
    },
    {
      name: 'a resolved permission does not hide a still-pending clarification',
      s: live({ pendingRequests: [permission('t1', { status: 'ANSWERED' }), clarification('t1')] }),
      expected: 'CLARIFICATION',
    },
    {
      name: 'an unrelated resolved permission row does not clear a pending one',
      s: live({
        pendingRequests: [
          permission('t1', { status: 'ANSWERED' }),
          permission('t1'),
        ],
      }),
      expected: 'PERMISSION',
    },
    {
      // A tool call reaching COMPLETED is not a request row: it simply is not in pendingRequests,
      // and the turn it belongs to is the same current turn, so the permission stays armed.
      name: 'spec: an unrelated tool call reaching its terminal status keeps permission pending',
      s: live({ recentTurns: [turn('t1', 1, { hasMessages: true })], pendingRequests: [permission('t1')] }),
      expected: 'PERMISSION',
    },
    {
      name: 'spec: a detached clarification pending in an older turn, current turn has no pending input → null',
      s: live({
        state: 'WAITING_FOR_INPUT',
        recentTurns: [turn('t2', 5), turn('t1', 1)],
        pendingRequests: [clarification('t1')],
      }),
      expected: null,
    },
    {
      name: 'spec: … and completing the current turn cannot re-arm the detached clarification',
      s: live({
        state: 'IDLE',
        recentTurns: [turn('t2', 5), turn('t1', 1)],
        pendingRequests: [clarification('t1')],
      }),
      expected: null,
    },
  ])('$name', ({ s, expected }) => {
    expect(sessionPendingAction(s)).toBe(expected)
  })
})

describe('taskPendingAction', () => {
  const withPermission = (id: string) => live({ id, pendingRequests: [permission('t1')] })
  const withClarification = (id: string) => live({ id, pendingRequests: [clarification('t1')] })
  const quiet = (id: string) => live({ id })

  it.each<{ name: string; sessions: SessionObservation[]; expected: Pending }>([
    { name: 'no sessions', sessions: [], expected: null },
    { name: 'one quiet session', sessions: [quiet('a')], expected: null },
    { name: 'clarification in one session only', sessions: [quiet('a'), withClarification('b')], expected: 'CLARIFICATION' },
    {
      name: 'permission in another session outranks clarification (clarification first)',
      sessions: [withClarification('a'), withPermission('b')],
      expected: 'PERMISSION',
    },
    {
      name: 'permission in another session outranks clarification (permission first)',
      sessions: [withPermission('a'), withClarification('b')],
      expected: 'PERMISSION',
    },
    {
      name: 'a permission of a FAILED session does not outrank a live clarification',
      sessions: [live({ id: 'a', state: 'FAILED', pendingRequests: [permission('t1')] }), withClarification('b')],
      expected: 'CLARIFICATION',
    },
    {
      name: 'only sessions in RUNNING / WAITING_FOR_INPUT count',
      sessions: [
        live({ id: 'a', state: 'IDLE', pendingRequests: [permission('t1')] }),
        live({ id: 'b', state: 'COMPLETED', pendingRequests: [clarification('t1')] }),
      ],
      expected: null,
    },
    {
      name: 'one session’s resolved row does not clear another session’s pending permission',
      sessions: [
        live({ id: 'a', pendingRequests: [permission('t1', { status: 'ANSWERED' })] }),
        live({ id: 'b', pendingRequests: [permission('t1')] }),
      ],
      expected: 'PERMISSION',
    },
  ])('$name → $expected', ({ sessions, expected }) => {
    expect(taskPendingAction(sessions)).toBe(expected)
  })

  it.each<{ name: string; sessions: SessionObservation[]; expected: Pending }>([
    { name: 'permission', sessions: [withClarification('a'), withPermission('b')], expected: 'PERMISSION' },
    { name: 'detached clarification', sessions: [live({ recentTurns: [turn('t2', 5), turn('t1', 1)], pendingRequests: [clarification('t1')] })], expected: null },
  ])('deriveSummary carries the task pending action: $name', ({ sessions, expected }) => {
    const summary = deriveSummary(inputs({ sessions }))
    expect(summary.pendingAction).toBe(expected)
    validateSummary(summary)
  })
})

describe('decidesAlone: the read path may observe a session’s newest turn alone', () => {
  // Every window of one to three turns made of these kinds, newest first, with a request in each
  // of its turns: wherever the newest turn decides alone, the rules give what the whole window gives.
  const kinds: Record<string, (id: string, minutes: number) => TurnObservation> = {
    conversational: (id, m) => turn(id, m),
    'without messages': (id, m) => turn(id, m, { hasMessages: false }),
    lifecycle: (id, m) => turn(id, m, { lifecycleOnly: true }),
    'empty reservation': (id, m) => reservation(id, m),
    'attempted reservation': (id, m) => reservation(id, m, { promptDispatchAttempted: true }),
    'queued prompt': (id, m) => queuedPrompt(id, m),
  }
  const names = Object.keys(kinds)
  const windows: string[][] = []
  for (const a of names) {
    windows.push([a])
    for (const b of names) {
      windows.push([a, b])
      for (const c of names) windows.push([a, b, c])
    }
  }
  const states: SessionState[] = ['RUNNING', 'WAITING_FOR_INPUT', 'IDLE']

  it('is true exactly for a conversational, authoritative turn', () => {
    expect(names.filter((k) => decidesAlone(kinds[k]!('t', 0)))).toEqual(['conversational', 'without messages', 'attempted reservation'])
  })

  it.each(states)('in %s, every window whose newest turn decides alone gives the same pending fields with that turn alone', (state) => {
    let compared = 0
    for (const window of windows) {
      const turns = window.map((kind, i) => kinds[kind]!(`t${i}`, 10 - i))
      if (!decidesAlone(turns[0]!)) continue
      const pendingRequests = turns.flatMap((t, i) => [permission(t.id, { createdAt: new Date(Date.UTC(2026, 0, 1, 0, i)) }), clarification(t.id)])
      const whole = taskPending([session({ state, recentTurns: turns, pendingRequests })])
      expect(taskPending([session({ state, recentTurns: [turns[0]!], pendingRequests })]), window.join(' > ')).toEqual(whole)
      compared++
    }
    expect(compared).toBe(3 * (1 + 6 + 36))
  })
})
